/**
 * The chat: the sessions in a sidebar (new, rename, delete, search across them), a session's history, and turns
 * streaming as they happen (the routed agent and its confidence, memories, the plan, tool calls, approvals, loop
 * iterations, cost). A turn being streamed is named in the address (`?turn=`), so a reload re-attaches to it.
 */
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso';
import { api, data } from '../api/client.ts';
import { useAccount } from '../account.tsx';
import { ErrorNote, Loading, useAction, useLoad } from '../components/ui.tsx';
import { ConversationHeader } from './chat-header.tsx';
import { Composer } from './composer.tsx';
import { attach, send, turnNumber, useLiveTurns } from './live.ts';
import { SessionSidebar } from './session-list.tsx';
import {
  EmptyChat,
  groupByTurn,
  HistoryItem,
  LiveTurnView,
  type HistoryMessage,
  type HistoryPage,
} from './turn-view.tsx';

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
