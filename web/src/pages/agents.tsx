/**
 * Agents: the built-in and custom agents with their models and tools; fork a built-in, create and edit a custom
 * agent (prompt, tools, model), change an agent's model (a built-in keeps the catalogue's prompt and tools), delete
 * a custom one.
 */
import { useState } from 'preact/hooks';
import { api, data, type Answer } from '../api/client.ts';
import { useAccount } from '../account.tsx';
import { ConfirmButton } from '../components/confirm.tsx';
import { Form, FormActions, SelectField, TextArea, TextField } from '../components/form.tsx';
import { Page } from '../components/layout.tsx';
import { Badge, ItemCard, ItemList } from '../components/list.tsx';
import { ErrorNote, StatusNote, useAction, useLoad, WhenLoaded } from '../components/ui.tsx';
import { modelsForPlan } from './models.ts';

/** An agent as listed, and as `GET /agents/{id}` describes it (with its prompt) for editing. */
type AgentView = Answer<'/agents', 'get'>['agents'][number] & Partial<Answer<'/agents/{id}', 'get'>>;

export function AgentsPage() {
  const { me } = useAccount();
  const agents = useLoad(async () => (await data(api.GET('/agents'))).agents, []);
  const models = useLoad(() => modelsForPlan(me.user?.plan), [me.user?.plan]);
  const [editing, setEditing] = useState<AgentView | 'new' | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const allTools = [...new Set((agents.value ?? []).flatMap((agent) => agent.tools))].sort();

  const done = async (message: string) => {
    setEditing(null);
    setNotice(message);
    await agents.reload();
  };

  return (
    <Page
      title="Agents"
      actions={
        <button type="button" onClick={() => setEditing('new')}>
          New custom agent
        </button>
      }
    >
      <StatusNote>{notice}</StatusNote>
      {editing ? (
        <AgentForm
          agent={editing === 'new' ? null : editing}
          tools={allTools}
          models={models.value ?? []}
          onCancel={() => setEditing(null)}
          onSaved={done}
        />
      ) : null}
      <WhenLoaded state={agents} what="agents" errorPrefix="Agents could not be loaded">
        {(list) => (
          <ItemList label="Agents" items={list} grid>
            {(agent) => (
              <AgentCard
                key={agent.id}
                agent={agent}
                models={models.value ?? []}
                onEdit={async () => {
                  const full = await data(api.GET('/agents/{id}', { params: { path: { id: agent.id } } }));
                  setEditing(full);
                }}
                onChanged={done}
              />
            )}
          </ItemList>
        )}
      </WhenLoaded>
    </Page>
  );
}

function AgentCard(props: {
  agent: AgentView;
  models: string[];
  onEdit(): Promise<void>;
  onChanged(message: string): Promise<void>;
}) {
  const { agent } = props;
  const [model, setModel] = useState(agent.model);
  const action = useAction();
  const path = { id: agent.id };
  const act = async (call: () => Promise<unknown>, message: string) => {
    if (await action.run(call)) await props.onChanged(message);
  };
  return (
    <ItemCard
      title={agent.name}
      aside={<Badge>{agent.builtin ? 'built-in' : 'custom'}</Badge>}
      actions={
        agent.builtin ? (
          <button
            type="button"
            class="secondary"
            disabled={action.busy}
            onClick={() =>
              act(
                () => data(api.POST('/agents/{id}/fork', { params: { path }, body: {} })),
                `Forked ${agent.name} into a custom agent you can edit.`,
              )
            }
          >
            Fork
          </button>
        ) : (
          <>
            <button type="button" class="secondary" onClick={() => action.run(props.onEdit)}>
              Edit
            </button>
            <ConfirmButton
              label={`Delete ${agent.name}`}
              warning="Chats can no longer pick it."
              confirm={`Yes, delete ${agent.name}`}
              disabled={action.busy}
              onConfirm={() =>
                act(() => data(api.DELETE('/agents/custom/{id}', { params: { path } })), `Deleted ${agent.name}.`)
              }
            >
              Delete
            </ConfirmButton>
          </>
        )
      }
      footer={<ErrorNote error={action.error} />}
    >
      <p>{agent.description}</p>
      <p class="muted">
        Model: {agent.model}
        {agent.workspace ? ` · works with your Google ${agent.workspace}` : ''}
        {agent.forked_from ? ` · forked from ${agent.forked_from}` : ''}
      </p>
      <p class="muted">Tools: {agent.tools.length ? agent.tools.join(', ') : 'none'}</p>
      <Form
        inline
        onSubmit={() =>
          act(
            () => data(api.POST('/agents/{id}/model', { params: { path }, body: { model } })),
            `${agent.name} now answers with ${model}.`,
          )
        }
      >
        <SelectField
          id={`model-${agent.id}`}
          label="Model"
          inline
          value={model}
          options={[...new Set([agent.model, ...props.models])]}
          onValue={setModel}
        />
        <button type="submit" class="secondary" disabled={action.busy || model === agent.model}>
          Change model
        </button>
      </Form>
    </ItemCard>
  );
}

function AgentForm(props: {
  agent: AgentView | null;
  tools: string[];
  models: string[];
  onCancel(): void;
  onSaved(message: string): Promise<void>;
}) {
  const { agent } = props;
  const [name, setName] = useState(agent?.name ?? '');
  const [description, setDescription] = useState(agent?.description ?? '');
  const [prompt, setPrompt] = useState(agent?.system_prompt ?? '');
  const [model, setModel] = useState(agent?.configured_model ?? agent?.model ?? '');
  const [tools, setTools] = useState<string[]>(agent?.tools ?? []);
  // Tools no listed agent has yet (the agent service's own, such as publish_site or send_email), by name.
  const [otherTools, setOtherTools] = useState(
    (agent?.tools ?? []).filter((tool) => !props.tools.includes(tool)).join(', '),
  );
  const action = useAction();
  const submit = async () => {
    const body = {
      name: name.trim(),
      description: description.trim(),
      system_prompt: prompt.trim(),
      tools: [
        ...new Set([
          ...tools.filter((tool) => props.tools.includes(tool)),
          ...otherTools
            .split(',')
            .map((tool) => tool.trim())
            .filter(Boolean),
        ]),
      ],
      ...(model ? { model } : {}),
    };
    const saved = await action.run(() =>
      agent
        ? data(api.PATCH('/agents/{id}', { params: { path: { id: agent.id } }, body }))
        : data(api.POST('/agents/custom', { body })),
    );
    if (saved) await props.onSaved(agent ? `Saved ${body.name}.` : `Created ${body.name}.`);
  };
  return (
    <Form title={agent ? `Edit ${agent.name}` : 'New custom agent'} onSubmit={submit}>
      <TextField id="agent-name" label="Name" required maxLength={80} value={name} onValue={setName} />
      <TextArea
        id="agent-description"
        label="Description (what the router reads to pick it)"
        required
        rows={2}
        maxLength={1000}
        value={description}
        onValue={setDescription}
      />
      <TextArea
        id="agent-prompt"
        label="System prompt"
        required
        rows={6}
        maxLength={20000}
        value={prompt}
        onValue={setPrompt}
      />
      <SelectField
        id="agent-model"
        label="Model"
        value={model}
        options={[{ value: '', label: 'The default model' }, ...props.models]}
        onValue={setModel}
      />
      <fieldset class="field">
        <legend>Tools</legend>
        <div class="grid">
          {props.tools.map((tool) => (
            <label key={tool} class="checkbox">
              <input
                type="checkbox"
                checked={tools.includes(tool)}
                onChange={(e) =>
                  setTools((e.target as HTMLInputElement).checked ? [...tools, tool] : tools.filter((t) => t !== tool))
                }
              />
              <span>{tool}</span>
            </label>
          ))}
        </div>
        <TextField
          id="agent-other-tools"
          label="Other tools, by name (comma-separated)"
          inline
          placeholder="publish_site, send_email"
          value={otherTools}
          onValue={setOtherTools}
        />
      </fieldset>
      <FormActions submit={agent ? 'Save' : 'Create'} action={action} onCancel={props.onCancel} />
    </Form>
  );
}
