/**
 * How a turn looks in the transcript: a stored message (the history), and a turn as it streams or as it ended (the
 * routed agent, memories, plan, tool calls, approvals, loop iterations, its cost).
 */
import { useLayoutEffect, useState } from 'preact/hooks';
import { api, data, type Answer } from '../api/client.ts';
import { Markdown } from '../components/markdown.tsx';
import { ErrorNote, formatDate, formatNumber, formatUsd, Json, useAction } from '../components/ui.tsx';
import type { Approval, ToolCall, Turn } from './events.ts';
import { markAfterTask, markCancelling, useLiveTurn, type LiveTurn } from './live.ts';

export type HistoryPage = Answer<'/history/{session_id}', 'get'>;
export type HistoryMessage = HistoryPage['messages'][number];
/** A turn as the history shows it: its agent, cost and alternatives. */
export type TurnView = HistoryPage['turns'][number];

export function EmptyChat() {
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

export interface TurnGroup {
  key: string;
  number: number | null;
  messages: HistoryMessage[];
}

/** History messages by turn (their cursors are `<turn>.<position>`). */
export function groupByTurn(messages: HistoryMessage[]): TurnGroup[] {
  const groups: TurnGroup[] = [];
  for (const message of messages) {
    const number = Number(message.cursor.split('.')[0]);
    const last = groups.at(-1);
    if (last && last.number === number) last.messages.push(message);
    else groups.push({ key: message.cursor, number: Number.isFinite(number) ? number : null, messages: [message] });
  }
  return groups;
}

/** A stored message of a turn's answer: a tool's result or the assistant's text (the question is transcript.tsx's). */
export function HistoryItem({ message, view }: { message: HistoryMessage; view?: TurnView | undefined }) {
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
      <article
        class="message assistant"
        aria-label={
          view?.agent ? `Agent ${view.agent.name}` : message.agent_id ? `Agent ${message.agent_id}` : 'Assistant'
        }
      >
        <p class="speaker">{view?.agent ? <AgentLine agent={view.agent} /> : (message.agent_id ?? 'Assistant')}</p>
        <Markdown text={message.content} />
      </article>
    );
  }
  return null;
}

let drawnMarked = false;

/**
 * User Timing marks for `npm run bench:web`, set once per page load: the first token's DOM commit
 * (`tessera:first-token-committed`), and a task posted then (`tessera:first-token-drawn`: Chromium runs it after the
 * next frame when one is due, before that frame otherwise). live.ts marks the token's arrival and the end of the frame
 * that paints it.
 */
function markFirstToken(): void {
  drawnMarked = true;
  performance.mark('tessera:first-token-committed');
  markAfterTask('tessera:first-token-drawn');
}

export function LiveTurnView({ entry }: { entry: LiveTurn }) {
  // The turn re-renders itself as it streams; the conversation around it re-renders only as turns come and end.
  const turn = useLiveTurn(entry);
  const hasText = turn.parts.some((part) => part.kind === 'text');
  // The first token is in the DOM now (live.ts renders a turn's first token at once, then once per animation frame).
  useLayoutEffect(() => {
    if (hasText && !drawnMarked) markFirstToken();
  }, [hasText]);
  return (
    <article
      class={`message assistant live ${turn.status}`}
      aria-label={turn.agent ? `Agent ${turn.agent.name}` : 'Assistant'}
      aria-busy={turn.status === 'streaming'}
    >
      <p class="speaker">
        {turn.agent ? (
          <AgentLine agent={turn.agent} />
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

/** The agent that answered, how sure the router was, and the model: the same for a live turn and a stored one. */
export function AgentLine({ agent }: { agent: { name: string; confidence: number; method: string; model: string } }) {
  return (
    <>
      <span class="agent-name">{agent.name}</span>{' '}
      <span class="badge" title={`Chosen by ${agent.method}`}>
        {Math.round(agent.confidence * 100)}% confident
      </span>{' '}
      <span class="muted">{agent.model}</span>
    </>
  );
}

/** A turn's cost line, live or stored. */
export function CostLine({
  cost,
}: {
  cost: {
    credits: number;
    costUsd: number;
    inputTokens: number;
    outputTokens: number;
    model: string;
    stopped: boolean;
  };
}) {
  return (
    <p class="cost" data-testid="turn-cost">
      {cost.stopped ? <strong>Stopped · </strong> : null}
      {formatNumber(cost.credits)} credits · {formatUsd(cost.costUsd)} · {formatNumber(cost.inputTokens)} in /{' '}
      {formatNumber(cost.outputTokens)} out · {cost.model}
    </p>
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
  if (turn.cost) return <CostLine cost={{ ...turn.cost, stopped: turn.stopped }} />;
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
