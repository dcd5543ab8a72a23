/**
 * The transcript: the branch's turns as the history has them (each with its agent, cost and alternatives), the turns
 * streaming now, and what a person can do with a turn: copy the answer, regenerate it, ask the same message of another
 * agent, edit the message (each a new turn standing in for this one, `replaces_turn`: the old one stays reachable),
 * page through a turn's alternatives (`PUT /sessions/{id}/branch`), and the follow-up suggestions under the last answer.
 * A message's uploaded images are named under it ("Attached: a.png, b.png"), live (with its other files too) or reopened
 * (the history's `attachments`); a turn standing in for it sends only the text, and the service attaches the images
 * again (docs/agent-service.md).
 */
import { useState } from 'preact/hooks';
import { CopyButton, ErrorNote, useAction } from '../components/ui.tsx';
import type { ChatRequest } from '../api/stream.ts';
import { turnNumber, type LiveTurn } from './live.ts';
import { CostLine, HistoryItem, LiveTurnView, type TurnGroup, type TurnView } from './turn-view.tsx';

export type SendRequest = ChatRequest & { max_iterations?: number; replaces_turn?: string };

interface Agent {
  id: string;
  name: string;
}

interface TranscriptProps {
  groups: TurnGroup[];
  views: Map<number, TurnView>;
  live: LiveTurn[];
  agents: Agent[];
  /** A turn is streaming: no other may start. */
  busy: boolean;
  suggestions: { turnId: string; items: string[] } | null;
  /** `attachment`: the name of the image the message keeps (a turn standing in for one with an image), to show. */
  onSend(request: SendRequest, attachment?: string | null): void;
  onShowBranch(turnId: string): Promise<void>;
}

export function Transcript(props: TranscriptProps) {
  const liveByNumber = new Map(props.live.map((entry) => [turnNumber(entry.turn.turnId), entry]));
  const unplaced = props.live.filter((entry) => {
    const number = turnNumber(entry.turn.turnId);
    return number === null || !props.groups.some((group) => group.number === number);
  });
  const lastTurnId = lastTurn(props);
  // One list for the history's turns and those only streamed so far: a turn moving from the one to the other keeps its
  // key, and so its DOM (see `liveKey`).
  return (
    <>
      {[
        ...props.groups.map((group) => {
          const entry = group.number !== null ? liveByNumber.get(group.number) : undefined;
          const view = group.number !== null ? props.views.get(group.number) : undefined;
          const question = group.messages.find((message) => message.role === 'user');
          const answer = entry ? answerOf(entry) : storedAnswer(group);
          const ended = entry ? entry.turn.status !== 'streaming' : view?.status !== 'running';
          // The images the service attaches again to a turn standing in for this one, by name ("a.png, b.png"; a live
          // turn's attachments may include other files, named in the message's text too).
          const image = view?.attachments.length ? view.attachments.map((file) => file.file_name).join(', ') : null;
          return (
            <div class="turn-group" key={entry ? liveKey(entry) : groupKey(group.number, group.key)}>
              {question ? (
                <UserMessage
                  text={question.content ?? ''}
                  channel={question.channel}
                  attachment={entry?.attachment ?? image}
                  image={image}
                  turnId={view?.turn_id ?? null}
                  editable={ended && !props.busy && view !== undefined}
                  onSend={props.onSend}
                />
              ) : null}
              {group.messages
                .filter((message) => message.role !== 'user' && !entry)
                .map((message) => (
                  <HistoryItem key={message.cursor} message={message} view={view} />
                ))}
              {!entry && view?.cost ? (
                <CostLine
                  cost={{
                    credits: view.cost.credits,
                    costUsd: view.cost.cost_usd,
                    inputTokens: view.cost.input_tokens,
                    outputTokens: view.cost.output_tokens,
                    model: view.cost.model,
                    stopped: view.cost.stopped ?? false,
                  }}
                />
              ) : null}
              {!entry && view?.error ? (
                <p class="note error" role="alert">
                  The turn failed: {view.error}
                </p>
              ) : null}
              {entry ? <LiveTurnView key="live" entry={entry} /> : null}
              {view && ended ? (
                <TurnActions
                  view={view}
                  question={question?.content ?? null}
                  image={image}
                  answer={answer}
                  agents={props.agents}
                  busy={props.busy}
                  onSend={props.onSend}
                  onShowBranch={props.onShowBranch}
                />
              ) : null}
              {props.suggestions && view && props.suggestions.turnId === view.turn_id && view.turn_id === lastTurnId ? (
                <Suggestions items={props.suggestions.items} busy={props.busy} onSend={props.onSend} />
              ) : null}
            </div>
          );
        }),
        ...unplaced.map((entry) => (
          <div class="turn-group" key={liveKey(entry)}>
            {entry.userMessage ? (
              <UserMessage
                text={entry.userMessage}
                channel="web"
                attachment={entry.attachment}
                image={null}
                turnId={null}
                editable={false}
                onSend={props.onSend}
              />
            ) : null}
            {entry.refusal ? (
              <p class="note error" role="alert">
                Not sent: {entry.refusal}
              </p>
            ) : (
              <LiveTurnView key="live" entry={entry} />
            )}
          </div>
        )),
      ]}
    </>
  );
}

/**
 * A turn's place in the transcript: a turn streamed on this page keeps the key it had from its sending on, whether
 * the history shows it yet or not, so it keeps its DOM as it gets its id and when the history places it (rather than
 * being drawn again from scratch, once in the middle of its first tokens); the history's other turns by their number.
 */
const liveKey = (entry: LiveTurn) => `live-${entry.key}`;
const groupKey = (number: number | null, otherwise: string) => (number !== null ? `turn-${number}` : otherwise);

/** The id of the transcript's last turn, when the history shows it. */
function lastTurn(props: TranscriptProps): string | null {
  const group = props.groups.at(-1);
  return group?.number != null ? (props.views.get(group.number)?.turn_id ?? null) : null;
}

/** A live turn's answer: its text parts. */
function answerOf(entry: LiveTurn): string {
  return entry.turn.parts
    .filter((part) => part.kind === 'text')
    .map((part) => (part.kind === 'text' ? part.text : ''))
    .join('\n\n');
}

/** A stored turn's answer: its assistant messages' text. */
function storedAnswer(group: TurnGroup): string {
  return group.messages
    .filter((message) => message.role === 'assistant' && message.content)
    .map((message) => message.content)
    .join('\n\n');
}

function UserMessage(props: {
  text: string;
  channel: string;
  /** The names of the files attached to the message ("a.png, b.pdf"), if it had any. */
  attachment: string | null;
  /** The names of the message's uploaded images, which an edited message keeps (the service attaches them again). */
  image: string | null;
  turnId: string | null;
  editable: boolean;
  onSend(request: SendRequest, attachment?: string | null): void;
}) {
  const [editing, setEditing] = useState(false);
  const [draft, setDraft] = useState(props.text);
  const id = `edit-${props.turnId ?? 'new'}`;
  if (editing && props.turnId) {
    return (
      <form
        class="message user editing"
        aria-label="Edit your message"
        onSubmit={(event) => {
          event.preventDefault();
          const message = draft.trim();
          if (!message) return;
          setEditing(false);
          // The service attaches the turn's images to the edited message again.
          props.onSend({ message, replaces_turn: props.turnId! }, props.image);
        }}
      >
        <label for={id}>Edit your message (sent as a new branch; the earlier one stays reachable)</label>
        <textarea
          id={id}
          rows={3}
          maxLength={32000}
          value={draft}
          onInput={(event) => setDraft((event.target as HTMLTextAreaElement).value)}
          onKeyDown={(event) => {
            if (event.key === 'Escape') setEditing(false);
          }}
        />
        {props.image ? <p class="attachment-note">Attached: {props.image} (kept)</p> : null}
        <div class="button-row">
          <button type="submit" disabled={!draft.trim()}>
            Send edited message
          </button>
          <button type="button" class="secondary" onClick={() => setEditing(false)}>
            Cancel
          </button>
        </div>
      </form>
    );
  }
  return (
    <article class="message user" aria-label="You">
      <p class="speaker">You{props.channel !== 'web' ? <span class="channel"> · via {props.channel}</span> : null}</p>
      <p class="user-text">{props.text}</p>
      {props.attachment ? <p class="attachment-note">Attached: {props.attachment}</p> : null}
      {props.editable ? (
        <button
          type="button"
          class="link-button edit-message"
          onClick={() => {
            setDraft(props.text);
            setEditing(true);
          }}
        >
          Edit
        </button>
      ) : null}
    </article>
  );
}

function TurnActions(props: {
  view: TurnView;
  question: string | null;
  /** The names of the question's uploaded images, which a regenerated turn keeps (the service attaches them again). */
  image: string | null;
  answer: string;
  agents: Agent[];
  busy: boolean;
  onSend(request: SendRequest, attachment?: string | null): void;
  onShowBranch(turnId: string): Promise<void>;
}) {
  const { view } = props;
  const page = useAction();
  const position = view.alternatives.indexOf(view.turn_id);
  const count = view.alternatives.length;
  const again = (agent?: string) => {
    if (!props.question) return;
    const agentId = agent ?? view.agent?.id;
    props.onSend(
      {
        message: props.question,
        replaces_turn: view.turn_id,
        ...(agentId ? { preferred_agents: [agentId] } : {}),
      },
      props.image,
    );
  };
  const others = props.agents.filter((agent) => agent.id !== view.agent?.id);
  const selectId = `another-agent-${view.turn_id}`;
  return (
    <div class="answer-actions" role="group" aria-label="Answer actions">
      {count > 1 ? (
        <span class="alternatives">
          <button
            type="button"
            class="secondary icon-button"
            aria-label="Previous answer"
            disabled={position <= 0 || page.busy || props.busy}
            onClick={() => page.run(() => props.onShowBranch(view.alternatives[position - 1]!))}
          >
            ‹
          </button>
          <span aria-live="polite">
            {position + 1} / {count}
          </span>
          <button
            type="button"
            class="secondary icon-button"
            aria-label="Next answer"
            disabled={position >= count - 1 || page.busy || props.busy}
            onClick={() => page.run(() => props.onShowBranch(view.alternatives[position + 1]!))}
          >
            ›
          </button>
        </span>
      ) : null}
      {props.answer ? <CopyButton text={props.answer} label="Copy answer" /> : null}
      {props.question ? (
        <>
          <button type="button" class="secondary" disabled={props.busy} onClick={() => again()}>
            Regenerate
          </button>
          {others.length ? (
            <span class="another-agent">
              <label for={selectId} class="visually-hidden">
                Ask another agent
              </label>
              <select
                id={selectId}
                disabled={props.busy}
                value=""
                onChange={(event) => {
                  const agent = (event.target as HTMLSelectElement).value;
                  if (agent) again(agent);
                }}
              >
                <option value="">Ask another agent…</option>
                {others.map((agent) => (
                  <option key={agent.id} value={agent.id}>
                    {agent.name}
                  </option>
                ))}
              </select>
            </span>
          ) : null}
        </>
      ) : null}
      <ErrorNote error={page.error} prefix="That answer could not be shown" />
    </div>
  );
}

function Suggestions(props: { items: string[]; busy: boolean; onSend(request: SendRequest): void }) {
  return (
    <section class="suggestions" aria-label="Suggested follow-ups">
      {props.items.map((item) => (
        <button
          type="button"
          class="secondary suggestion"
          key={item}
          disabled={props.busy}
          onClick={() => props.onSend({ message: item })}
        >
          {item}
        </button>
      ))}
    </section>
  );
}
