/**
 * Turns being streamed, kept outside the page's components: leaving the chat and coming back, or the router
 * remounting the page when a new chat gets its address, keeps the stream and what it showed. One entry per turn,
 * in the order sent; a page subscribes to its session's.
 */
import { useEffect, useState } from 'preact/hooks';
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
}

const turns: LiveTurn[] = [];
const listeners = new Set<() => void>();
let nextKey = 1;
let sawFirstToken = false;

let frameRequested = false;

/**
 * Pages re-render once per animation frame, however many events arrived: a burst of tokens is parsed in one go
 * (microtasks), and rendering each token as it is parsed would hold the page's main thread until the burst ended,
 * keeping the first token off the screen (measured: 65 ms for a simulated answer's burst).
 */
function changed(): void {
  if (frameRequested) return;
  frameRequested = true;
  requestAnimationFrame(() => {
    frameRequested = false;
    for (const listener of listeners) listener();
  });
}

function update(entry: LiveTurn, change: (turn: Turn) => Turn): void {
  entry.turn = change(entry.turn);
  changed();
}

/** The session's live turns, re-rendered as they change. */
export function useLiveTurns(sessionId: string | null): LiveTurn[] {
  const [, setVersion] = useState(0);
  useEffect(() => {
    const listener = () => setVersion((version) => version + 1);
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  }, []);
  return turns.filter((entry) => entry.sessionId === sessionId);
}

function onEvent(entry: LiveTurn) {
  return (event: StreamEvent) => {
    if (event.type === 'token' && !sawFirstToken) {
      // User Timing marks for `npm run bench:web`: the stream's first token, and (chat-page.tsx) when it was drawn.
      sawFirstToken = true;
      performance.mark('tessera:first-token-received');
    }
    update(entry, (turn) => applyEvent(turn, event));
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
  };
  turns.push(entry);
  changed();
  void (async () => {
    try {
      await sendMessage(
        options.sessionId,
        options.request,
        options.loop,
        {
          onTurn: (turnId) => {
            update(entry, (turn) => ({ ...turn, turnId }));
            options.onTurn(turnId);
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
    options.onEnd(entry);
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
  };
  turns.push(entry);
  changed();
  void (async () => {
    try {
      await followTurn(turnId, { onEvent: onEvent(entry) }, entry.controller.signal);
    } catch (error) {
      update(entry, (turn) => ({ ...turn, status: 'failed', error: (error as Error).message }));
    }
    finish(entry);
    onEnd(entry);
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
  changed();
}

export function markCancelling(entry: LiveTurn): void {
  update(entry, (turn) => ({ ...turn, cancelling: true }));
}

/** The turn's number in its conversation (`chat-<conversation>-<n>`), as history cursors (`<n>.<seq>`) count. */
export function turnNumber(turnId: string | null): number | null {
  const match = turnId ? /-(\d+)$/.exec(turnId) : null;
  return match ? Number(match[1]) : null;
}
