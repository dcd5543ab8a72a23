/**
 * Agents: the built-in and custom agents with their models and tools; fork a built-in, create and edit a custom
 * agent (prompt, tools, model), change an agent's model (a built-in keeps the catalogue's prompt and tools), delete
 * a custom one.
 */
import { useState } from 'preact/hooks';
import { api, data, type Answer } from '../api/client.ts';
import { useAccount } from '../account.tsx';
import { ErrorNote, Loading, PageHeader, StatusNote, useAction, useLoad } from '../components/ui.tsx';
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
    <section class="page" aria-labelledby="page-title">
      <PageHeader title="Agents">
        <button type="button" onClick={() => setEditing('new')}>
          New custom agent
        </button>
      </PageHeader>
      {notice ? <StatusNote>{notice}</StatusNote> : null}
      {editing ? (
        <AgentForm
          agent={editing === 'new' ? null : editing}
          tools={allTools}
          models={models.value ?? []}
          onCancel={() => setEditing(null)}
          onSaved={done}
        />
      ) : null}
      <ErrorNote error={agents.error} prefix="Agents could not be loaded" />
      {agents.value ? (
        <ul class="grid list" aria-label="Agents">
          {agents.value.map((agent) => (
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
          ))}
        </ul>
      ) : agents.error ? null : (
        <Loading what="agents" />
      )}
    </section>
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
  const modelId = `model-${agent.id}`;
  return (
    <li>
      <div class="item-head">
        <h3>{agent.name}</h3>
        <span class="badge">{agent.builtin ? 'built-in' : 'custom'}</span>
      </div>
      <p>{agent.description}</p>
      <p class="muted">
        Model: {agent.model}
        {agent.workspace ? ` · works with your Google ${agent.workspace}` : ''}
        {agent.forked_from ? ` · forked from ${agent.forked_from}` : ''}
      </p>
      <p class="muted">Tools: {agent.tools.length ? agent.tools.join(', ') : 'none'}</p>
      <form
        class="inline-form"
        onSubmit={async (event) => {
          event.preventDefault();
          if (
            await action.run(() =>
              data(api.POST('/agents/{id}/model', { params: { path: { id: agent.id } }, body: { model } })),
            )
          ) {
            await props.onChanged(`${agent.name} now answers with ${model}.`);
          }
        }}
      >
        <label for={modelId}>Model</label>
        <select id={modelId} value={model} onChange={(event) => setModel((event.target as HTMLSelectElement).value)}>
          {[...new Set([agent.model, ...props.models])].map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
        <button type="submit" class="secondary" disabled={action.busy || model === agent.model}>
          Change model
        </button>
      </form>
      <div class="button-row">
        {agent.builtin ? (
          <button
            type="button"
            class="secondary"
            disabled={action.busy}
            onClick={async () => {
              if (
                await action.run(() =>
                  data(api.POST('/agents/{id}/fork', { params: { path: { id: agent.id } }, body: {} })),
                )
              ) {
                await props.onChanged(`Forked ${agent.name} into a custom agent you can edit.`);
              }
            }}
          >
            Fork
          </button>
        ) : (
          <>
            <button type="button" class="secondary" onClick={() => action.run(props.onEdit)}>
              Edit
            </button>
            <button
              type="button"
              class="danger"
              disabled={action.busy}
              onClick={async () => {
                if (
                  await action.run(() =>
                    data(api.DELETE('/agents/custom/{id}', { params: { path: { id: agent.id } } })),
                  )
                ) {
                  await props.onChanged(`Deleted ${agent.name}.`);
                }
              }}
            >
              Delete
            </button>
          </>
        )}
      </div>
      <ErrorNote error={action.error} />
    </li>
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
  const submit = async (event: Event) => {
    event.preventDefault();
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
    <form class="card" onSubmit={submit} aria-labelledby="agent-form-title">
      <h2 id="agent-form-title">{agent ? `Edit ${agent.name}` : 'New custom agent'}</h2>
      <div class="field">
        <label for="agent-name">Name</label>
        <input
          id="agent-name"
          required
          maxLength={80}
          value={name}
          onInput={(e) => setName((e.target as HTMLInputElement).value)}
        />
      </div>
      <div class="field">
        <label for="agent-description">Description (what the router reads to pick it)</label>
        <textarea
          id="agent-description"
          required
          rows={2}
          maxLength={1000}
          value={description}
          onInput={(e) => setDescription((e.target as HTMLTextAreaElement).value)}
        />
      </div>
      <div class="field">
        <label for="agent-prompt">System prompt</label>
        <textarea
          id="agent-prompt"
          required
          rows={6}
          maxLength={20000}
          value={prompt}
          onInput={(e) => setPrompt((e.target as HTMLTextAreaElement).value)}
        />
      </div>
      <div class="field">
        <label for="agent-model">Model</label>
        <select id="agent-model" value={model} onChange={(e) => setModel((e.target as HTMLSelectElement).value)}>
          <option value="">The default model</option>
          {props.models.map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
      </div>
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
        <label for="agent-other-tools">Other tools, by name (comma-separated)</label>
        <input
          id="agent-other-tools"
          value={otherTools}
          placeholder="publish_site, send_email"
          onInput={(e) => setOtherTools((e.target as HTMLInputElement).value)}
        />
      </fieldset>
      <div class="button-row">
        <button type="submit" disabled={action.busy}>
          {agent ? 'Save' : 'Create'}
        </button>
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
      <ErrorNote error={action.error} />
    </form>
  );
}
