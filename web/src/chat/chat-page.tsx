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
import { attach, isRunning, liveTurnsOf, send, turnNumber, useLiveTurns, type LiveTurn } from './live.ts';
import { SessionSidebar } from './session-list.tsx';
import { Transcript, type SendRequest } from './transcript.tsx';
import {
  EmptyChat,
  groupByTurn,
  type HistoryMessage,
  type HistoryPage,
  type TurnGroup,
  type TurnView,
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

  // Called once the turn's first token is painted, or a second after its start (live.ts).
  const onTurnStarted = (session: string, turnId: string) => {
    const path = `/chats/${encodeURIComponent(session)}`;
    // Unless the person went elsewhere meanwhile: the address names the session and, while it runs, the turn
    // (replaced, so Back does not step through turns).
    if (window.location.pathname === '/' || window.location.pathname === path) {
      location.route(isRunning(turnId) ? `${path}?turn=${encodeURIComponent(turnId)}` : path, true);
    }
    // The chat is listed from its first message on: an approval or a loop may keep its answer for minutes.
    void sessions.reload();
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
  // A new chat becomes saved when its first turn starts: its history then is that turn, live already, so the address
  // change does not read it again (the read's answer would re-render the conversation as the first token arrives);
  // the turn's end reads it.
  const saved = useRef(props.saved);
  saved.current = props.saved;
  const history = useLoad(async () => {
    // Saved once a turn of it has started here, whether or not the address says so yet (it follows when idle).
    const started = liveTurnsOf(sessionId).some((entry) => entry.turn.turnId !== null);
    if (!saved.current && !started) return { messages: [], next_before: null, turns: [] } as EmptyPage;
    const page = await data(
      api.GET('/history/{session_id}', { params: { path: { session_id: sessionId }, query: { limit: 100 } } }),
    );
    setBefore(page.next_before);
    setOlder([]);
    return page;
  }, [sessionId]);
  const loadOlder = useAction();
  const [olderTurns, setOlderTurns] = useState<TurnView[]>([]);
  const streaming = live.some((entry) => entry.turn.status === 'streaming' && !entry.refusal);
  // A regenerated or edited turn: it and what follows it leave the transcript until the history shows the new branch.
  const [replacing, setReplacing] = useState<number | null>(null);
  // Live turns that ended before the history was last read: the history places them, or they left the branch.
  const [settled, setSettled] = useState<Set<number>>(new Set());
  const [suggestions, setSuggestions] = useState<{ turnId: string; items: string[] } | null>(null);
  const agents = useLoad(async () => (await data(api.GET('/agents'))).agents, []);

  const messages = useMemo(() => [...older, ...(history.value?.messages ?? [])], [older, history.value]);
  const groups = useMemo(() => {
    const all = groupByTurn(messages);
    const cut = replacing === null ? -1 : all.findIndex((group) => group.number === replacing);
    return cut < 0 ? all : all.slice(0, cut);
  }, [messages, replacing]);
  const views = useMemo(
    () => new Map([...olderTurns, ...(history.value?.turns ?? [])].map((view) => [view.number, view])),
    [olderTurns, history.value],
  );

  const log = useRef<HTMLDivElement>(null);
  const content = useRef<HTMLDivElement>(null);
  const end = useRef<HTMLDivElement>(null);
  const stickToBottom = useRef(true);
  useLayoutEffect(() => followToBottom(log.current!, content.current!, end.current!, stickToBottom), []);

  const afterTurn = async (entry: LiveTurn) => {
    props.onTurnEnded();
    await history.reload();
    setReplacing(null);
    setSettled(endedTurns(sessionId));
    const turnId = entry.turn.turnId;
    if (entry.turn.status === 'done' && turnId) {
      // Follow-up suggestions under the answer that just ended (a model call of its own, so only for a live answer,
      // never for a chat merely reopened). Quietly absent when the service has none.
      setSuggestions(null);
      const found = await api.POST('/chat/suggest', { body: { session_id: sessionId, count: 3 } }).catch(() => null);
      if (found?.data?.suggestions.length) setSuggestions({ turnId, items: found.data.suggestions });
    }
  };

  const sendTurn = (request: SendRequest, loop = false, attachment: string | null = null) => {
    stickToBottom.current = true;
    setSuggestions(null);
    const replaced = request.replaces_turn ? turnNumber(request.replaces_turn) : null;
    if (replaced !== null) setReplacing(replaced);
    send({
      sessionId,
      request,
      loop,
      attachment,
      onTurn: props.onTurnStarted,
      onEnd: (entry) => void afterTurn(entry),
    });
  };

  const showBranch = async (turnId: string) => {
    await data(
      api.PUT('/sessions/{session_id}/branch', {
        params: { path: { session_id: sessionId } },
        body: { turn_id: turnId },
      }),
    );
    setSuggestions(null);
    setOlderTurns([]);
    await history.reload();
    setSettled(endedTurns(sessionId));
  };

  return (
    <section class="conversation" aria-labelledby="conversation-title">
      <ConversationHeader {...props} />
      <div class="messages" ref={log} role="log" aria-live="polite" aria-label="Messages" tabIndex={0}>
        <div class="messages-content" ref={content}>
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
                  setOlderTurns((previous) => [...page.turns, ...previous]);
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
          <Transcript
            groups={groups}
            views={views}
            live={live.filter((entry) => !settled.has(entry.key) || isPlaced(entry, groups))}
            agents={agents.value ?? []}
            busy={streaming}
            suggestions={suggestions}
            onSend={(request, attachment) => sendTurn(request, false, attachment ?? null)}
            onShowBranch={showBranch}
          />
          <div class="messages-end" ref={end} />
        </div>
      </div>
      <Composer
        sessionId={sessionId}
        streaming={streaming}
        onSend={(request, loop, attachment) => sendTurn(request, loop, attachment)}
        agents={agents.value ?? []}
      />
    </section>
  );
}

/**
 * Keeps the conversation scrolled to its end while the person is there (within 80 px of it), as it grows or its
 * box shrinks; once they scroll up to read, it stays where they are until they come back down or send. Observers,
 * not reads after each render: the browser reports the content's new size after the layout it does anyway in a frame
 * (reading `scrollHeight` after each render forced one more, in the middle of a stream), and whether the end is in
 * view after the scroll that follows, so the page itself never measures anything.
 */
function followToBottom(
  scroller: HTMLElement,
  content: HTMLElement,
  end: HTMLElement,
  stick: { current: boolean },
): () => void {
  const resized = new ResizeObserver(() => {
    if (stick.current) scroller.scrollTop = scroller.scrollHeight;
  });
  resized.observe(content);
  resized.observe(scroller);
  const seen = new IntersectionObserver(
    (entries) => {
      stick.current = entries.at(-1)!.isIntersecting;
    },
    { root: scroller, rootMargin: '0px 0px 80px 0px' },
  );
  seen.observe(end);
  return () => {
    resized.disconnect();
    seen.disconnect();
  };
}

/**
 * The session's live turns that have ended, as they are now: `afterTurn` runs in the closure of the render that sent
 * the turn, whose list of live turns is that render's.
 */
const endedTurns = (sessionId: string) =>
  new Set(
    liveTurnsOf(sessionId)
      .filter((item) => item.turn.status !== 'streaming')
      .map((item) => item.key),
  );

type EmptyPage = Pick<HistoryPage, 'messages' | 'next_before' | 'turns'>;

const isPlaced = (entry: LiveTurn, groups: TurnGroup[]) => {
  const number = turnNumber(entry.turn.turnId);
  return number !== null && groups.some((group) => group.number === number);
};
