/**
 * Turns being streamed, kept outside the page's components: leaving the chat and coming back, or the router
 * remounting the page when a new chat gets its address, keeps the stream and what it showed. One entry per turn,
 * in the order sent; a page subscribes to its session's.
 */
import { useLayoutEffect, useState } from 'preact/hooks';
import { applyEvent, emptyTurn, type StreamEvent, type Turn } from './events.ts';
import { followTurn, sendMessage, type ChatRequest } from '../api/stream.ts';
import { RequestFailed } from '../api/client.ts';

export interface LiveTurn {
  key: number;
  sessionId: string;
  /** The message as sent (null for a turn re-attached after a reload: the history has it). */
  userMessage: string | null;
  attachment: string | null;
  turn: Turn;
  /** Refused before it started (no credits, a bad message …): the API's words. */
  refusal: string | null;
  controller: AbortController;
  /** Called once the turn's first token has been painted. */
  onShown: (() => void) | null;
}

const turns: LiveTurn[] = [];
let nextKey = 1;
let sawFirstToken = false;

/**
 * Two kinds of listener, so that a token re-renders the turn it belongs to and nothing else: a page hears of a
 * session's turns coming, going, getting their id or ending (what its transcript and composer show depends on that),
 * a turn's view hears of everything that changes the turn. A streaming token used to re-render the whole conversation
 * (header, every earlier turn, composer) each frame.
 */
const pageListeners = new Set<() => void>();
const turnListeners = new Map<LiveTurn, Set<() => void>>();
let pageChanged = false;
const turnsChanged = new Set<LiveTurn>();

let frameRequested = false;
/** A first token was just rendered at once: the coming frame paints it and renders nothing itself. */
let holdFrame = false;

function render(): void {
  const page = pageChanged;
  const changedTurns = [...turnsChanged];
  pageChanged = false;
  turnsChanged.clear();
  if (page) for (const listener of pageListeners) listener();
  for (const entry of changedTurns) renderTurn(entry);
}

function renderTurn(entry: LiveTurn): void {
  turnsChanged.delete(entry);
  for (const listener of turnListeners.get(entry) ?? []) listener();
}

function onFrame(): void {
  if (holdFrame) {
    holdFrame = false;
    requestAnimationFrame(onFrame);
    return;
  }
  frameRequested = false;
  if (pageChanged || turnsChanged.size) render();
}

/**
 * Pages re-render once per animation frame, however many events arrived: a burst of tokens is parsed in one go
 * (microtasks), and rendering each token as it is parsed would hold the page's main thread until the burst ended,
 * keeping the first token off the screen (measured: 65 ms for a simulated answer's burst). A turn's first token is
 * the exception (`now`): its turn is rendered at once, in the burst, alone (a page change pending with it, as the turn
 * getting its id in the same burst, waits), so it is in the DOM before the next frame begins rather than waiting for
 * that frame's callbacks, and that frame, which paints it, renders nothing more: what the rest of the burst brought
 * follows a frame later (`npm run bench:web` measures the first token).
 */
function changed(entry: LiveTurn | null, now = false): void {
  if (entry) turnsChanged.add(entry);
  else pageChanged = true;
  if (now && entry) {
    // The turn alone: what else changed (the page's part included) waits for the frame after the one that paints it.
    renderTurn(entry);
    holdFrame = true;
  }
  if (frameRequested) return;
  frameRequested = true;
  requestAnimationFrame(onFrame);
}

function update(entry: LiveTurn, change: (turn: Turn) => Turn, now = false): void {
  const before = entry.turn;
  entry.turn = change(before);
  // What the page reads of a turn: its id (where the transcript places it) and its status (whether one streams).
  if (entry.turn.turnId !== before.turnId || entry.turn.status !== before.status) pageChanged = true;
  changed(entry, now);
}

/**
 * Work that follows a turn's end (the page reloads its chat list and the account's balance, re-rendering the whole
 * app) waits until the frame that shows the end is painted: a short answer's first token and its end arrive in one
 * burst, and that work would otherwise run before the first token reaches the screen. Where no frame comes (a hidden
 * tab), it runs after 100 ms.
 */
function afterPaint(work: () => void): void {
  const run = once(work);
  requestAnimationFrame(() => setTimeout(run, 0));
  setTimeout(run, 100);
}

/** `work`, run by the first of the calls that ask for it. */
function once(work: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    work();
  };
}

/** One channel for every mark set after a task (made with the page: making one costs about a millisecond at first). */
const markChannel = new MessageChannel();
markChannel.port1.onmessage = (event: MessageEvent<string>) => performance.mark(event.data);

/**
 * A User Timing mark for `npm run bench:web`, set in a task posted now: Chromium runs it after the next frame when one
 * is due (posted from a frame's animation callbacks, after that frame).
 */
export function markAfterTask(name: string): void {
  markChannel.port2.postMessage(name);
}

/**
 * Marks, for `npm run bench:web`, the frame that paints the first token: from its arrival, each frame's animation
 * callbacks look for the token's DOM commit (turn-view.tsx's `tessera:first-token-committed`); the first frame that
 * finds it marks its start (`tessera:first-token-frame`, its detail the frames counted since the arrival, 1 when the
 * token made the very next one) and the end of its rendering (`tessera:first-token-painted`).
 */
function markPaintingFrame(frames = 1): void {
  requestAnimationFrame(() => {
    if (performance.getEntriesByName('tessera:first-token-committed').length === 0) {
      // Two seconds of frames at most (a page left before the token was shown).
      if (frames < 120) markPaintingFrame(frames + 1);
      return;
    }
    performance.mark('tessera:first-token-frame', { detail: frames });
    // A user-blocking task runs as soon as the frame's rendering ends, ahead of the ordinary tasks (the page's work
    // after the paint) posted meanwhile: a message posted from here could wait behind them.
    const { scheduler } = globalThis as { scheduler?: { postTask(task: () => void, options: object): Promise<void> } };
    const painted = () => performance.mark('tessera:first-token-painted');
    if (scheduler) void scheduler.postTask(painted, { priority: 'user-blocking' });
    else markAfterTask('tessera:first-token-painted');
  });
}

/** The session's live turns, re-rendered as they come, get their ids and end (not as they stream: `useLiveTurn`). */
export function useLiveTurns(sessionId: string | null): LiveTurn[] {
  useListener(pageListeners);
  return liveTurnsOf(sessionId);
}

/** The session's live turns as they are now. */
export function liveTurnsOf(sessionId: string | null): LiveTurn[] {
  return turns.filter((entry) => entry.sessionId === sessionId);
}

/** A live turn as it is now, re-rendered with each frame that changed it. */
export function useLiveTurn(entry: LiveTurn): Turn {
  let listeners = turnListeners.get(entry);
  if (!listeners) turnListeners.set(entry, (listeners = new Set()));
  useListener(listeners);
  return entry.turn;
}

function useListener(listeners: Set<() => void>): void {
  const [, setVersion] = useState(0);
  // A layout effect: subscribed before the browser paints, so no change between this render and the subscription
  // goes unheard (a change in that gap would otherwise wait for the next one).
  useLayoutEffect(() => {
    const listener = () => setVersion((version) => version + 1);
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  }, [listeners]);
}

function onEvent(entry: LiveTurn) {
  return (event: StreamEvent) => {
    if (event.type === 'token' && !sawFirstToken) {
      // User Timing marks for `npm run bench:web`: the stream's first token; the start and the end of the frame that
      // paints it (the token is rendered at once, before any frame, and this frame callback, asked for before the
      // others the burst asks for, posts its task first, ahead of the work they start); and (turn-view.tsx) its DOM
      // commit and when it was drawn.
      sawFirstToken = true;
      performance.mark('tessera:first-token-received');
      markPaintingFrame();
    }
    const firstText = event.type === 'token' && !entry.turn.parts.some((part) => part.kind === 'text');
    update(entry, (turn) => applyEvent(turn, event), firstText);
    if (firstText) afterPaint(() => entry.onShown?.());
  };
}

export interface SendOptions {
  sessionId: string;
  request: ChatRequest & { max_iterations?: number };
  loop: boolean;
  attachment: string | null;
  onTurn(turnId: string): void;
  onEnd(entry: LiveTurn): void;
}

export function send(options: SendOptions): LiveTurn {
  const entry: LiveTurn = {
    key: nextKey++,
    sessionId: options.sessionId,
    userMessage: options.request.message,
    attachment: options.attachment,
    turn: emptyTurn(options.loop),
    refusal: null,
    controller: new AbortController(),
    onShown: null,
  };
  turns.push(entry);
  changed(null);
  void (async () => {
    try {
      await sendMessage(
        options.sessionId,
        options.request,
        options.loop,
        {
          onTurn: (turnId) => {
            update(entry, (turn) => ({ ...turn, turnId }));
            // What the page does at a turn's start (the address, the chat list) re-renders the app and is not urgent:
            // it waits until the first token is painted (it would otherwise compete with it: the answer often starts
            // within a few frames), a second at most (a turn waiting for an approval, a tool or a loop's first step).
            entry.onShown = once(() => options.onTurn(turnId));
            setTimeout(entry.onShown, 1000);
          },
          onEvent: onEvent(entry),
        },
        entry.controller.signal,
      );
    } catch (error) {
      if (!entry.turn.turnId && error instanceof RequestFailed) entry.refusal = error.message;
      else update(entry, (turn) => ({ ...turn, status: 'failed', error: (error as Error).message }));
    }
    finish(entry);
    afterPaint(() => options.onEnd(entry));
  })();
  return entry;
}

/** Re-attaches to a turn (after a reload): its whole stream so far, then live. */
export function attach(sessionId: string, turnId: string, onEnd: (entry: LiveTurn) => void): LiveTurn {
  const existing = turns.find((entry) => entry.turn.turnId === turnId);
  if (existing) return existing;
  const entry: LiveTurn = {
    key: nextKey++,
    sessionId,
    userMessage: null,
    attachment: null,
    turn: { ...emptyTurn(false), turnId },
    refusal: null,
    controller: new AbortController(),
    onShown: null,
  };
  turns.push(entry);
  changed(null);
  void (async () => {
    try {
      await followTurn(turnId, { onEvent: onEvent(entry) }, entry.controller.signal);
    } catch (error) {
      update(entry, (turn) => ({ ...turn, status: 'failed', error: (error as Error).message }));
    }
    finish(entry);
    afterPaint(() => onEnd(entry));
  })();
  return entry;
}

function finish(entry: LiveTurn): void {
  if (entry.turn.status === 'streaming') {
    update(entry, (turn) => ({
      ...turn,
      status: 'failed',
      error: 'The stream ended before the turn finished',
    }));
  }
  changed(null);
}

/** Whether the turn is streaming on this page now. */
export function isRunning(turnId: string): boolean {
  return turns.some((entry) => entry.turn.turnId === turnId && entry.turn.status === 'streaming');
}

export function markCancelling(entry: LiveTurn): void {
  update(entry, (turn) => ({ ...turn, cancelling: true }));
}

/** The turn's number in its conversation (`chat-<conversation>-<n>`), as history cursors (`<n>.<seq>`) count. */
export function turnNumber(turnId: string | null): number | null {
  const match = turnId ? /-(\d+)$/.exec(turnId) : null;
  return match ? Number(match[1]) : null;
}
