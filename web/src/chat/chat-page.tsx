/**
 * The chat: the sessions in a sidebar (new, rename, delete, search across them), a session's history, and turns
 * streaming as they happen (the routed agent and its confidence, memories, the plan, tool calls, approvals, loop
 * iterations, cost). A turn being streamed is named in the address (`?turn=`), so a reload re-attaches to it.
 */
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { api, data, type Answer } from '../api/client.ts';
import { uploadFile } from '../api/uploads.ts';
import { useAccount } from '../account.tsx';
import { Markdown } from '../components/markdown.tsx';
import {
  CopyButton,
  ErrorNote,
  formatDate,
  formatNumber,
  formatUsd,
  Json,
  Loading,
  useAction,
  useLoad,
} from '../components/ui.tsx';
import type { Approval, ToolCall, Turn } from './events.ts';
import { attach, markCancelling, send, turnNumber, useLiveTurns, type LiveTurn } from './live.ts';

type SessionSummary = Answer<'/sessions', 'get'>['sessions'][number];
type HistoryPage = Answer<'/history/{session_id}', 'get'>;
type HistoryMessage = HistoryPage['messages'][number];

const newSessionId = () => `web:${crypto.randomUUID()}`;

export function ChatPage() {
  const { params, query } = useRoute();
  const location = useLocation();
  const account = useAccount();
  const routeSession = params.session_id ? decodeURIComponent(params.session_id) : null;
  // A new chat gets its id now; it exists on the server from its first message.
  const [draftSession, setDraftSession] = useState(newSessionId);
  const sessionId = routeSession ?? draftSession;
  const sessions = useLoad(async () => (await data(api.GET('/sessions'))).sessions, []);
  const [sidebarOpen, setSidebarOpen] = useState(false);
  // On a phone the chat list covers the conversation: choosing a chat closes it.
  useEffect(() => setSidebarOpen(false), [routeSession]);

  // Reload mid-stream: the address names the turn; follow it again from its start.
  useEffect(() => {
    const turnId = query.turn;
    if (routeSession && turnId) {
      attach(routeSession, turnId, () => {
        void sessions.reload();
        void account.reload();
        clearTurnFromAddress();
      });
    }
  }, [routeSession, query.turn]);

  const onTurnStarted = (session: string, turnId: string) => {
    // The address now names the session and the running turn (replaced, so Back does not step through turns).
    location.route(`/chats/${encodeURIComponent(session)}?turn=${encodeURIComponent(turnId)}`, true);
  };
  const onTurnEnded = () => {
    void sessions.reload();
    void account.reload();
    clearTurnFromAddress();
  };

  return (
    <div class={`chat-layout${sidebarOpen ? ' sidebar-open' : ''}`}>
      <SessionSidebar
        sessions={sessions.value}
        error={sessions.error}
        current={routeSession}
        onNew={() => {
          setDraftSession(newSessionId());
          location.route('/');
        }}
        onChanged={() => sessions.reload()}
        onClose={() => setSidebarOpen(false)}
      />
      <Conversation
        key={sessionId}
        sessionId={sessionId}
        saved={routeSession !== null}
        title={sessions.value?.find((session) => session.session_id === sessionId)?.title ?? null}
        onToggleSidebar={() => setSidebarOpen(!sidebarOpen)}
        sidebarOpen={sidebarOpen}
        onTurnStarted={(turnId) => onTurnStarted(sessionId, turnId)}
        onTurnEnded={onTurnEnded}
        onRenamed={() => sessions.reload()}
        onDeleted={() => {
          void sessions.reload();
          setDraftSession(newSessionId());
          location.route('/');
        }}
      />
    </div>
  );
}

function clearTurnFromAddress(): void {
  const url = new URL(location.href);
  if (!url.searchParams.has('turn')) return;
  url.searchParams.delete('turn');
  history.replaceState(history.state, '', url.pathname + url.search);
}

function SessionSidebar(props: {
  sessions: SessionSummary[] | undefined;
  error: unknown;
  current: string | null;
  onNew(): void;
  onChanged(): void;
  onClose(): void;
}) {
  const [query, setQuery] = useState('');
  const [results, setResults] = useState<Answer<'/search/messages', 'get'>['results'] | null>(null);
  const search = useAction();
  const runSearch = async (event: Event) => {
    event.preventDefault();
    const q = query.trim();
    if (!q) {
      setResults(null);
      return;
    }
    await search.run(async () => {
      const found = await data(api.GET('/search/messages', { params: { query: { q, limit: 20 } } }));
      setResults(found.results);
    });
  };

  return (
    <aside class="sessions" aria-label="Chats">
      <div class="sessions-top">
        <button type="button" onClick={props.onNew}>
          New chat
        </button>
        <button type="button" class="secondary close-sidebar" onClick={props.onClose}>
          Close
        </button>
      </div>
      <form role="search" onSubmit={runSearch} class="session-search">
        <label for="session-search" class="visually-hidden">
          Search all chats
        </label>
        <input
          id="session-search"
          type="search"
          placeholder="Search all chats"
          value={query}
          onInput={(event) => setQuery((event.target as HTMLInputElement).value)}
        />
        <button type="submit" class="secondary" disabled={search.busy}>
          Search
        </button>
      </form>
      <ErrorNote error={search.error} prefix="Search failed" />
      {results ? (
        <section aria-label="Search results" class="search-results">
          <p role="status">
            {results.length === 0 ? 'No message matches.' : `${results.length} matching messages`}{' '}
            <button type="button" class="link-button" onClick={() => setResults(null)}>
              Clear
            </button>
          </p>
          <ul>
            {results.map((hit, index) => (
              <li key={index}>
                <a href={`/chats/${encodeURIComponent(hit.session_id)}`}>
                  <Snippet text={hit.snippet} />
                  <small>{formatDate(hit.created_at)}</small>
                </a>
              </li>
            ))}
          </ul>
        </section>
      ) : null}
      <ErrorNote error={props.error} prefix="Chats could not be loaded" />
      {props.sessions ? (
        props.sessions.length === 0 ? (
          <p class="muted">No chats yet.</p>
        ) : (
          <ul class="session-list">
            {props.sessions.map((session) => (
              <li key={session.session_id}>
                <a
                  href={`/chats/${encodeURIComponent(session.session_id)}`}
                  aria-current={session.session_id === props.current ? 'page' : undefined}
                >
                  <span class="session-title">{session.title ?? 'New chat'}</span>
                  <small>
                    {formatDate(session.last_activity)} · {session.message_count} messages
                  </small>
                </a>
              </li>
            ))}
          </ul>
        )
      ) : props.error ? null : (
        <Loading what="chats" />
      )}
    </aside>
  );
}

/** A search snippet: the service marks matches with « and » in plain text; they become <mark>, nothing is HTML. */
function Snippet({ text }: { text: string }) {
  const pieces = text.split(/(«[^»]*»)/);
  return (
    <span class="snippet">
      {pieces.map((piece, index) =>
        piece.startsWith('«') && piece.endsWith('»') ? <mark key={index}>{piece.slice(1, -1)}</mark> : piece,
      )}
    </span>
  );
}

interface ConversationProps {
  sessionId: string;
  saved: boolean;
  title: string | null;
  sidebarOpen: boolean;
  onToggleSidebar(): void;
  onTurnStarted(turnId: string): void;
  onTurnEnded(): void;
  onDeleted(): void;
  onRenamed(): void;
}

function Conversation(props: ConversationProps) {
  const { sessionId } = props;
  const live = useLiveTurns(sessionId);
  const [older, setOlder] = useState<HistoryMessage[]>([]);
  const [before, setBefore] = useState<string | null>(null);
  const history = useLoad(async () => {
    if (!props.saved) return { messages: [], next_before: null } as Pick<HistoryPage, 'messages' | 'next_before'>;
    const page = await data(
      api.GET('/history/{session_id}', { params: { path: { session_id: sessionId }, query: { limit: 100 } } }),
    );
    setBefore(page.next_before);
    return page;
  }, [sessionId, props.saved]);
  const loadOlder = useAction();
  const streaming = live.some((entry) => entry.turn.status === 'streaming' && !entry.refusal);

  const messages = useMemo(() => [...older, ...(history.value?.messages ?? [])], [older, history.value]);
  const groups = useMemo(() => groupByTurn(messages), [messages]);
  const liveByNumber = new Map(live.map((entry) => [turnNumber(entry.turn.turnId), entry]));
  const unplaced = live.filter((entry) => {
    const number = turnNumber(entry.turn.turnId);
    return number === null || !groups.some((group) => group.number === number);
  });

  const log = useRef<HTMLDivElement>(null);
  const stickToBottom = useRef(true);
  useLayoutEffect(() => {
    const element = log.current;
    if (element && stickToBottom.current) element.scrollTop = element.scrollHeight;
  });

  return (
    <section class="conversation" aria-labelledby="conversation-title">
      <ConversationHeader {...props} />
      <div
        class="messages"
        ref={log}
        role="log"
        aria-live="polite"
        aria-label="Messages"
        tabIndex={0}
        onScroll={(event) => {
          const element = event.currentTarget;
          stickToBottom.current = element.scrollHeight - element.scrollTop - element.clientHeight < 80;
        }}
      >
        {before ? (
          <button
            type="button"
            class="secondary load-older"
            disabled={loadOlder.busy}
            onClick={() =>
              loadOlder.run(async () => {
                const page = await data(
                  api.GET('/history/{session_id}', {
                    params: { path: { session_id: sessionId }, query: { limit: 100, before } },
                  }),
                );
                setOlder((previous) => [...page.messages, ...previous]);
                setBefore(page.next_before ?? null);
              })
            }
          >
            Load earlier messages
          </button>
        ) : null}
        <ErrorNote error={loadOlder.error} />
        {history.loading && !history.value ? <Loading what="the conversation" /> : null}
        <ErrorNote error={history.error} prefix="The conversation could not be loaded" />
        {groups.length === 0 && live.length === 0 && !history.loading ? <EmptyChat /> : null}
        {groups.map((group) => {
          const entry = group.number !== null ? liveByNumber.get(group.number) : undefined;
          return (
            <div class="turn-group" key={group.key}>
              {group.messages
                .filter((message) => !entry || message.role === 'user')
                .map((message) => (
                  <HistoryItem key={message.cursor} message={message} />
                ))}
              {entry?.attachment ? <p class="attachment-note">Attached: {entry.attachment}</p> : null}
              {entry ? <LiveTurnView entry={entry} /> : null}
            </div>
          );
        })}
        {unplaced.map((entry) => (
          <div class="turn-group" key={`live-${entry.key}`}>
            {entry.userMessage ? (
              <article class="message user" aria-label="You">
                <p class="speaker">You</p>
                <p class="user-text">{entry.userMessage}</p>
                {entry.attachment ? <p class="attachment-note">Attached: {entry.attachment}</p> : null}
              </article>
            ) : null}
            {entry.refusal ? (
              <p class="note error" role="alert">
                Not sent: {entry.refusal}
              </p>
            ) : (
              <LiveTurnView entry={entry} />
            )}
          </div>
        ))}
      </div>
      <Composer
        sessionId={sessionId}
        streaming={streaming}
        onSend={(request, loop, attachment) => {
          stickToBottom.current = true;
          send({
            sessionId,
            request,
            loop,
            attachment,
            onTurn: props.onTurnStarted,
            onEnd: props.onTurnEnded,
          });
        }}
        live={live}
      />
    </section>
  );
}

function EmptyChat() {
  return (
    <div class="empty-chat">
      <h2>What can I do for you?</h2>
      <p class="muted">
        Ask anything: the right agent answers (research, code, writing, analysis, planning …). Attach an image or a
        file, or run an agent loop for longer work.
      </p>
    </div>
  );
}

interface TurnGroup {
  key: string;
  number: number | null;
  messages: HistoryMessage[];
}

/** History messages by turn (their cursors are `<turn>.<position>`). */
function groupByTurn(messages: HistoryMessage[]): TurnGroup[] {
  const groups: TurnGroup[] = [];
  for (const message of messages) {
    const number = Number(message.cursor.split('.')[0]);
    const last = groups.at(-1);
    if (last && last.number === number) last.messages.push(message);
    else groups.push({ key: message.cursor, number: Number.isFinite(number) ? number : null, messages: [message] });
  }
  return groups;
}

function HistoryItem({ message }: { message: HistoryMessage }) {
  if (message.role === 'user') {
    return (
      <article class="message user" aria-label="You">
        <p class="speaker">
          You{message.channel !== 'web' ? <span class="channel"> · via {message.channel}</span> : null}
        </p>
        <p class="user-text">{message.content}</p>
      </article>
    );
  }
  if (message.role === 'tool') {
    return (
      <details class="tool-card done">
        <summary>
          <span class="tool-name">{message.tool_name ?? 'tool'}</span> result
        </summary>
        <Json value={message.content} />
      </details>
    );
  }
  if (message.role === 'assistant' && message.content) {
    return (
      <article class="message assistant" aria-label={message.agent_id ? `Agent ${message.agent_id}` : 'Assistant'}>
        <p class="speaker">{message.agent_id ?? 'Assistant'}</p>
        <Markdown text={message.content} />
      </article>
    );
  }
  return null;
}

let drawnMarked = false;

function LiveTurnView({ entry }: { entry: LiveTurn }) {
  const { turn } = entry;
  const hasText = turn.parts.some((part) => part.kind === 'text');
  // The first token is in the DOM now, in the frame that paints it (live.ts renders in animation frames): a message
  // posted now arrives right after that paint (User Timing for `npm run bench:web`).
  useLayoutEffect(() => {
    if (hasText && !drawnMarked) {
      drawnMarked = true;
      const channel = new MessageChannel();
      channel.port1.onmessage = () => performance.mark('tessera:first-token-drawn');
      channel.port2.postMessage(null);
    }
  }, [hasText]);
  return (
    <article
      class={`message assistant live ${turn.status}`}
      aria-label={turn.agent ? `Agent ${turn.agent.name}` : 'Assistant'}
      aria-busy={turn.status === 'streaming'}
    >
      <p class="speaker">
        {turn.agent ? (
          <>
            <span class="agent-name">{turn.agent.name}</span>{' '}
            <span class="badge" title={`Chosen by ${turn.agent.method}`}>
              {Math.round(turn.agent.confidence * 100)}% confident
            </span>{' '}
            <span class="muted">{turn.agent.model}</span>
          </>
        ) : turn.status === 'streaming' ? (
          'Choosing an agent…'
        ) : (
          'Assistant'
        )}
      </p>
      {turn.memories.length ? (
        <details class="memories">
          <summary>{turn.memories.length} memories used</summary>
          <ul>
            {turn.memories.map((memory) => (
              <li key={memory.id}>{memory.content}</li>
            ))}
          </ul>
        </details>
      ) : null}
      {turn.plan.length ? <Plan steps={turn.plan} /> : null}
      {turn.parts.map((part, index) => {
        switch (part.kind) {
          case 'text':
            return <Markdown key={index} text={part.text} />;
          case 'tool':
            return <ToolCard key={part.callId} call={part} />;
          case 'approval':
            return <ApprovalCard key={part.id} approval={part} />;
          case 'iteration':
            return (
              <p key={`iteration-${part.iteration}`} class="iteration" role="note">
                Iteration {part.iteration} ended
                {part.marker === 'continue' ? ', continuing' : ''}
                {part.stop ? `: loop stopped (${stopReasons[part.stop] ?? part.stop})` : ''}
              </p>
            );
          default:
            return null;
        }
      })}
      {turn.status === 'streaming' && !turn.parts.length ? (
        <p class="typing" role="status">
          Working…
        </p>
      ) : null}
      <TurnFooter entry={entry} turn={turn} />
    </article>
  );
}

const stopReasons: Record<string, string> = {
  done: 'the agent said it is done',
  no_marker: 'the answer asked for no further step',
  max_iterations: 'the iteration limit',
  budget: 'the credit budget',
  cancelled: 'cancelled',
};

function TurnFooter({ entry, turn }: { entry: LiveTurn; turn: Turn }) {
  const cancel = useAction();
  if (turn.status === 'streaming') {
    // A loop stops after its current iteration; any other turn at once, keeping what it streamed (the service's
    // `POST /chat/turns/{id}/cancel` either way). The stream then ends as usual, with the turn's cost.
    const busy = cancel.busy || turn.cancelling || !turn.turnId;
    const label = turn.loop
      ? turn.cancelling
        ? 'Cancelling after this iteration…'
        : 'Cancel loop'
      : turn.cancelling
        ? 'Stopping…'
        : 'Stop';
    return (
      <div class="turn-actions">
        <button
          type="button"
          class="secondary"
          disabled={busy}
          onClick={() =>
            cancel.run(async () => {
              await data(api.POST('/chat/turns/{turn_id}/cancel', { params: { path: { turn_id: turn.turnId! } } }));
              markCancelling(entry);
            })
          }
        >
          {label}
        </button>
        <ErrorNote error={cancel.error} prefix={turn.loop ? 'Cancelling failed' : 'Stopping failed'} />
      </div>
    );
  }
  if (turn.status === 'failed') {
    return (
      <p class="note error" role="alert">
        The turn failed: {turn.error}
      </p>
    );
  }
  if (turn.cost) {
    return (
      <p class="cost" data-testid="turn-cost">
        {turn.stopped ? <strong>Stopped · </strong> : null}
        {formatNumber(turn.cost.credits)} credits · {formatUsd(turn.cost.costUsd)} ·{' '}
        {formatNumber(turn.cost.inputTokens)} in / {formatNumber(turn.cost.outputTokens)} out · {turn.cost.model}
      </p>
    );
  }
  return null;
}

function Plan({ steps }: { steps: Turn['plan'] }) {
  const marks = { pending: '○', in_progress: '◐', completed: '●' };
  const words = { pending: 'to do', in_progress: 'in progress', completed: 'done' };
  return (
    <section class="plan" aria-label="Plan">
      <p class="plan-title">Plan</p>
      <ol>
        {steps.map((step) => (
          <li key={step.index} class={step.status}>
            <span aria-hidden="true">{marks[step.status]}</span> {step.title}{' '}
            <span class="visually-hidden">({words[step.status]})</span>
          </li>
        ))}
      </ol>
    </section>
  );
}

const toolStates = { calling: 'running', done: 'done', failed: 'failed' };

function ToolCard({ call }: { call: ToolCall }) {
  return (
    <details class={`tool-card ${call.status}`}>
      <summary>
        <span class="tool-name">{call.tool}</span> <span class="tool-state">{toolStates[call.status]}</span>
        {call.status === 'calling' && call.progress ? <span class="muted"> · {call.progress}</span> : null}
      </summary>
      {call.arguments !== undefined ? (
        <>
          <p class="label">Arguments</p>
          <Json value={call.arguments} />
        </>
      ) : null}
      {call.result !== undefined ? (
        <>
          <p class="label">{call.status === 'failed' ? 'Error' : 'Result'}</p>
          <Json value={call.result} />
        </>
      ) : null}
    </details>
  );
}

function ApprovalCard({ approval }: { approval: Approval }) {
  const [reason, setReason] = useState('');
  const decide = useAction();
  const decided = approval.decision;
  const reasonId = `reason-${approval.id}`;
  const run = (verdict: 'approve' | 'reject') =>
    decide.run(() => {
      const request = { params: { path: { id: approval.id } }, body: reason ? { reason } : {} };
      return verdict === 'approve'
        ? data(api.POST('/chat/approvals/{id}/approve', request))
        : data(api.POST('/chat/approvals/{id}/reject', request));
    });
  return (
    <section class={`approval${decided ? ' decided' : ''}`} aria-label={`Approval for ${approval.tool}`}>
      <p class="approval-title">
        <strong>{approval.tool}</strong> needs your approval
      </p>
      <p class="muted">It will run with these arguments:</p>
      <Json value={approval.arguments} />
      {decided ? (
        <p role="status" class={decided.approved ? 'approved' : 'rejected'}>
          {decided.approved ? 'Approved' : 'Rejected'}
          {decided.by === 'timeout' ? ' (nobody answered in time)' : ''}
          {decided.reason ? `: ${decided.reason}` : ''}
        </p>
      ) : (
        <>
          <p class="muted">Answer by {formatDate(approval.expiresAt)}, or it counts as rejected.</p>
          <label for={reasonId}>Reason (optional)</label>
          <input
            id={reasonId}
            value={reason}
            maxLength={500}
            onInput={(event) => setReason((event.target as HTMLInputElement).value)}
          />
          <div class="button-row">
            <button type="button" disabled={decide.busy} onClick={() => run('approve')}>
              Approve
            </button>
            <button type="button" class="danger" disabled={decide.busy} onClick={() => run('reject')}>
              Reject
            </button>
          </div>
          <ErrorNote error={decide.error} />
        </>
      )}
    </section>
  );
}

function Composer(props: {
  sessionId: string;
  streaming: boolean;
  live: LiveTurn[];
  onSend(
    request: { message: string; image_file_id?: string; preferred_agents?: string[]; max_iterations?: number },
    loop: boolean,
    attachment: string | null,
  ): void;
}) {
  const [message, setMessage] = useState('');
  const [agent, setAgent] = useState('');
  const [loop, setLoop] = useState(false);
  const [iterations, setIterations] = useState(5);
  const [file, setFile] = useState<File | null>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const action = useAction();
  const agents = useLoad(async () => (await data(api.GET('/agents'))).agents, []);

  const submit = async (event?: Event) => {
    event?.preventDefault();
    const text = message.trim();
    if (!text || action.busy) return;
    await action.run(async () => {
      let imageFileId: string | undefined;
      let note = '';
      if (file) {
        const uploaded = await uploadFile(file);
        // The service names an upload's kind by its format (png, jpeg …): its content type says it is an image.
        if (uploaded.content_type.startsWith('image/')) {
          imageFileId = uploaded.id;
        } else {
          // Agents read uploads with their read_upload and rag_search tools, by the file's id.
          note = `\n\n(Attached file: ${uploaded.file_name}, file id ${uploaded.id})`;
          await data(api.POST('/rag/index', { body: { file_id: uploaded.id } })).catch(() => undefined);
        }
      }
      props.onSend(
        {
          message: text + note,
          ...(imageFileId ? { image_file_id: imageFileId } : {}),
          ...(agent ? { preferred_agents: [agent] } : {}),
          ...(loop ? { max_iterations: iterations } : {}),
        },
        loop,
        file ? file.name : null,
      );
      setMessage('');
      setFile(null);
      if (fileInput.current) fileInput.current.value = '';
    });
  };

  return (
    <form class="composer" onSubmit={submit} aria-label="Send a message">
      <label for="composer-message" class="visually-hidden">
        Message
      </label>
      <textarea
        id="composer-message"
        rows={3}
        placeholder="Message (Enter sends, Shift+Enter for a new line)"
        value={message}
        maxLength={32000}
        onInput={(event) => setMessage((event.target as HTMLTextAreaElement).value)}
        onKeyDown={(event) => {
          if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
            event.preventDefault();
            void submit();
          }
        }}
      />
      <div class="composer-options">
        <label class="agent-picker">
          <span>Agent</span>
          <select value={agent} onChange={(event) => setAgent((event.target as HTMLSelectElement).value)}>
            <option value="">Automatic</option>
            {(agents.value ?? []).map((item) => (
              <option key={item.id} value={item.id}>
                {item.name}
              </option>
            ))}
          </select>
        </label>
        <label class="checkbox">
          <input
            type="checkbox"
            checked={loop}
            onChange={(event) => setLoop((event.target as HTMLInputElement).checked)}
          />
          <span>Agent loop</span>
        </label>
        {loop ? (
          <label>
            <span>Iterations at most</span>
            <input
              type="number"
              min={1}
              max={200}
              value={iterations}
              class="narrow"
              onInput={(event) => setIterations(Number((event.target as HTMLInputElement).value) || 1)}
            />
          </label>
        ) : null}
        <label class="file-picker">
          <span>{file ? `Attached: ${file.name}` : 'Attach an image or file'}</span>
          <input
            ref={fileInput}
            type="file"
            accept="image/png,image/jpeg,image/webp,image/gif,application/pdf,text/csv,.csv,.xlsx"
            onChange={(event) => setFile((event.target as HTMLInputElement).files?.[0] ?? null)}
          />
        </label>
        {file ? (
          <button
            type="button"
            class="link-button"
            onClick={() => {
              setFile(null);
              if (fileInput.current) fileInput.current.value = '';
            }}
          >
            Remove attachment
          </button>
        ) : null}
        <button type="submit" class="send" disabled={action.busy || !message.trim()}>
          {action.busy ? 'Sending…' : 'Send'}
        </button>
      </div>
      <ErrorNote error={action.error} prefix="Not sent" />
      {props.streaming ? <span class="visually-hidden">An answer is streaming.</span> : null}
    </form>
  );
}

function ConversationHeader(props: ConversationProps) {
  const [panel, setPanel] = useState<'none' | 'rename' | 'share' | 'usage' | 'delete'>('none');
  const toggle = (name: typeof panel) => setPanel(panel === name ? 'none' : name);
  return (
    <header class="conversation-header">
      <button
        type="button"
        class="secondary sidebar-toggle"
        aria-expanded={props.sidebarOpen}
        onClick={props.onToggleSidebar}
      >
        Chats
      </button>
      <h1 id="conversation-title">{props.saved ? (props.title ?? 'Chat') : 'New chat'}</h1>
      {props.saved ? (
        <div class="conversation-actions">
          <button type="button" class="secondary" aria-expanded={panel === 'rename'} onClick={() => toggle('rename')}>
            Rename
          </button>
          <button type="button" class="secondary" aria-expanded={panel === 'share'} onClick={() => toggle('share')}>
            Share / export
          </button>
          <button type="button" class="secondary" aria-expanded={panel === 'usage'} onClick={() => toggle('usage')}>
            Usage
          </button>
          <button type="button" class="danger" aria-expanded={panel === 'delete'} onClick={() => toggle('delete')}>
            Delete
          </button>
        </div>
      ) : null}
      {panel === 'rename' ? (
        <RenamePanel
          sessionId={props.sessionId}
          title={props.title}
          onDone={() => {
            setPanel('none');
            props.onRenamed();
          }}
        />
      ) : null}
      {panel === 'share' ? <SharePanel sessionId={props.sessionId} /> : null}
      {panel === 'usage' ? <UsagePanel sessionId={props.sessionId} /> : null}
      {panel === 'delete' ? (
        <DeletePanel sessionId={props.sessionId} onCancel={() => setPanel('none')} onDeleted={props.onDeleted} />
      ) : null}
    </header>
  );
}

function SharePanel({ sessionId }: { sessionId: string }) {
  const [link, setLink] = useState<string | null>(null);
  const [revoked, setRevoked] = useState<number | null>(null);
  const action = useAction();
  const encoded = encodeURIComponent(sessionId);
  return (
    <div class="panel">
      <p>A share link shows this conversation as it is now, read-only, to anyone who has the link.</p>
      <div class="button-row">
        <button
          type="button"
          disabled={action.busy}
          onClick={() =>
            action.run(async () => {
              const share = await data(
                api.POST('/share/{session_id}', { params: { path: { session_id: sessionId } }, body: {} }),
              );
              setLink(share.url);
              setRevoked(null);
            })
          }
        >
          Create a share link
        </button>
        <button
          type="button"
          class="secondary"
          disabled={action.busy}
          onClick={() =>
            action.run(async () => {
              const answer = await data(
                api.DELETE('/share/{session_id}', { params: { path: { session_id: sessionId } } }),
              );
              setRevoked(answer.revoked);
              setLink(null);
            })
          }
        >
          Revoke all links
        </button>
        <a class="button secondary" href={`/export/${encoded}?format=md`} download>
          Export Markdown
        </a>
        <a class="button secondary" href={`/export/${encoded}?format=json`} download>
          Export JSON
        </a>
      </div>
      {link ? (
        <p role="status" class="share-link">
          <a href={link} target="_blank" rel="noopener noreferrer">
            {link}
          </a>{' '}
          <CopyButton text={link} label="Copy link" />
        </p>
      ) : null}
      {revoked !== null ? <p role="status">Revoked {revoked} link(s).</p> : null}
      <ErrorNote error={action.error} />
    </div>
  );
}

function UsagePanel({ sessionId }: { sessionId: string }) {
  const usage = useLoad(
    async () => data(api.GET('/usage/{session_id}', { params: { path: { session_id: sessionId } } })),
    [sessionId],
  );
  if (usage.error) return <ErrorNote error={usage.error} />;
  if (!usage.value) return <Loading what="usage" />;
  const value = usage.value;
  return (
    <div class="panel">
      <p>
        {value.turns} turns · {formatNumber(value.credits)} credits · {formatUsd(value.cost_usd)} ·{' '}
        {formatNumber(value.input_tokens)} tokens in, {formatNumber(value.output_tokens)} out
      </p>
      {value.by_model.length ? (
        <table>
          <caption class="visually-hidden">Usage by model</caption>
          <thead>
            <tr>
              <th scope="col">Model</th>
              <th scope="col">Calls</th>
              <th scope="col">Credits</th>
              <th scope="col">Cost</th>
            </tr>
          </thead>
          <tbody>
            {value.by_model.map((row) => (
              <tr key={row.model}>
                <td>{row.model}</td>
                <td>{row.turns}</td>
                <td>{formatNumber(row.credits)}</td>
                <td>{formatUsd(row.cost_usd)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}

function RenamePanel({ sessionId, title, onDone }: { sessionId: string; title: string | null; onDone(): void }) {
  const [value, setValue] = useState(title ?? '');
  const action = useAction();
  return (
    <form
      class="panel inline-form"
      onSubmit={async (event) => {
        event.preventDefault();
        const renamed = await action.run(() =>
          data(
            api.PATCH('/sessions/{session_id}', {
              params: { path: { session_id: sessionId } },
              body: { title: value.trim() || null },
            }),
          ),
        );
        if (renamed) onDone();
      }}
    >
      <label for="rename-title">Title (empty: the first message)</label>
      <input
        id="rename-title"
        value={value}
        maxLength={200}
        onInput={(event) => setValue((event.target as HTMLInputElement).value)}
      />
      <button type="submit" disabled={action.busy}>
        Save title
      </button>
      <ErrorNote error={action.error} />
    </form>
  );
}

function DeletePanel(props: { sessionId: string; onCancel(): void; onDeleted(): void }) {
  const action = useAction();
  return (
    <div class="panel" role="group" aria-label="Delete this chat">
      <p>Delete this chat and its messages for good?</p>
      <div class="button-row">
        <button
          type="button"
          class="danger"
          disabled={action.busy}
          onClick={async () => {
            if (
              await action.run(() =>
                data(api.DELETE('/sessions/{session_id}', { params: { path: { session_id: props.sessionId } } })),
              )
            ) {
              props.onDeleted();
            }
          }}
        >
          Delete for good
        </button>
        <button type="button" class="secondary" onClick={props.onCancel}>
          Keep it
        </button>
      </div>
      <ErrorNote error={action.error} />
    </div>
  );
}
