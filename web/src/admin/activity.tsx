/**
 * The console's activity (`/admin/activity`, `?user=<id>` for one user's): the latest chat turns
 * (`GET /admin/api/turns`) and completion requests (`GET /admin/api/requests`), each with its trace on request
 * (`GET …/turns/{id}`: tools, provider attempts, ledger entries, the workflow; `GET …/requests/{id}`: the gateway's
 * trace) and its workflow in the Temporal Web UI.
 */
import type { ComponentChildren, JSX } from 'preact';
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { pagePaths } from '../../routes.ts';
import { api, data, type Answer } from '../api/client.ts';
import { ErrorNote, formatDate, formatNumber, Json, Loading, useLoad } from '../components/ui.tsx';
import { AdminGate, formatCredits, ScrollTable, TemporalLink } from './shared.tsx';

type Turn = Answer<'/admin/api/turns', 'get'>['turns'][number];
type Request = Answer<'/admin/api/requests', 'get'>['requests'][number];
type Attempt = NonNullable<Answer<'/admin/api/turns/{turn_id}', 'get'>['attempts']>[number];

const statuses = ['running', 'done', 'failed'] as const;

export function AdminActivityPage() {
  return (
    <AdminGate title="Activity">
      <Activity />
    </AdminGate>
  );
}

function Activity() {
  const location = useLocation();
  const user = location.query.user ?? '';
  const [typed, setTyped] = useState(user);
  const [status, setStatus] = useState<(typeof statuses)[number] | ''>('');
  return (
    <>
      <form
        class="inline-form"
        aria-label="Whose activity"
        onSubmit={(event) => {
          event.preventDefault();
          const id = typed.trim();
          location.route(id ? `${pagePaths.adminActivity}?user=${encodeURIComponent(id)}` : pagePaths.adminActivity);
        }}
      >
        <label for="activity-user">User id (empty: everyone)</label>
        <input
          id="activity-user"
          value={typed}
          maxLength={128}
          onInput={(event) => setTyped((event.target as HTMLInputElement).value)}
        />
        <button type="submit" class="secondary">
          Show
        </button>
      </form>
      {user ? (
        <p>
          Activity of <a href={`${pagePaths.adminUsers}/${encodeURIComponent(user)}`}>{user}</a>.
        </p>
      ) : null}
      <Turns user={user} status={status} setStatus={setStatus} />
      <Requests user={user} />
    </>
  );
}

function Turns(props: {
  user: string;
  status: (typeof statuses)[number] | '';
  setStatus(status: (typeof statuses)[number] | ''): void;
}) {
  const turns = useLoad(
    async () =>
      (
        await data(
          api.GET('/admin/api/turns', {
            params: {
              query: {
                limit: 25,
                ...(props.user ? { user_id: props.user } : {}),
                ...(props.status ? { status: props.status } : {}),
              },
            },
          }),
        )
      ).turns,
    [props.user, props.status],
  );
  return (
    <section class="card" aria-labelledby="turns-title">
      <div class="item-head">
        <h2 id="turns-title">Recent turns</h2>
        <div class="button-row">
          <label>
            <span class="visually-hidden">Status of the turns</span>
            <select
              value={props.status}
              onChange={(event) =>
                props.setStatus((event.target as HTMLSelectElement).value as (typeof statuses)[number] | '')
              }
            >
              <option value="">Any status</option>
              {statuses.map((status) => (
                <option key={status} value={status}>
                  {status}
                </option>
              ))}
            </select>
          </label>
          <button type="button" class="secondary" onClick={() => turns.reload()}>
            Refresh turns
          </button>
        </div>
      </div>
      <ErrorNote error={turns.error} />
      {turns.value ? (
        turns.value.length === 0 ? (
          <p class="muted">No turns.</p>
        ) : (
          <ScrollTable
            label="Recent turns"
            caption="Recent chat turns, newest first"
            columns={['When', 'User', 'Agent', 'Status', { title: 'Credits', number: true }, 'Trace']}
          >
            {turns.value.map((turn) => (
              <TurnRow key={turn.turn_id} turn={turn} />
            ))}
          </ScrollTable>
        )
      ) : turns.error ? null : (
        <Loading what="turns" />
      )}
    </section>
  );
}

function UserCell({ userId, email }: { userId: string | null; email?: string | null }) {
  if (!userId) return <>guest</>;
  return <a href={`${pagePaths.adminUsers}/${encodeURIComponent(userId)}`}>{email ?? userId}</a>;
}

function TurnRow({ turn }: { turn: Turn }) {
  return (
    <TraceRow
      testId="turn"
      traceKey={turn.turn_id}
      what={`the turn of ${formatDate(turn.created_at)}`}
      temporal={{ url: turn.temporal_url, workflowId: turn.turn_id }}
      columns={6}
      trace={() => <TurnTrace turnId={turn.turn_id} />}
    >
      <td>{formatDate(turn.created_at)}</td>
      <td>
        <UserCell userId={turn.user_id} email={turn.email} />
      </td>
      <td>{turn.agent_id ?? 'chat'}</td>
      <td>{turn.status}</td>
      <td class="number">{formatNumber(turn.credits)}</td>
    </TraceRow>
  );
}

/** A row of a table whose last cell opens its trace in a row below (turns and requests), with its Temporal link. */
function TraceRow(props: {
  testId: string;
  traceKey: string;
  /** What the trace is of, for screen readers ("the turn of …"). */
  what: string;
  temporal: { url: string; workflowId: string };
  columns: number;
  trace: () => JSX.Element;
  children: ComponentChildren;
}) {
  const [open, setOpen] = useState(false);
  const traceId = `trace-${props.traceKey}`;
  return (
    <>
      <tr data-testid={props.testId}>
        {props.children}
        <td>
          <div class="button-row tight">
            <button
              type="button"
              class="secondary"
              aria-expanded={open}
              aria-controls={open ? traceId : undefined}
              onClick={() => setOpen(!open)}
            >
              {open ? 'Hide trace' : 'Trace'}
              <span class="visually-hidden"> of {props.what}</span>
            </button>
            <TemporalLink url={props.temporal.url} workflowId={props.temporal.workflowId} />
          </div>
        </td>
      </tr>
      {open ? (
        <tr id={traceId}>
          <td colSpan={props.columns}>{props.trace()}</td>
        </tr>
      ) : null}
    </>
  );
}

function TurnTrace({ turnId }: { turnId: string }) {
  const trace = useLoad(
    () => data(api.GET('/admin/api/turns/{turn_id}', { params: { path: { turn_id: turnId } } })),
    [turnId],
  );
  const value = trace.value;
  if (trace.error) return <ErrorNote error={trace.error} />;
  if (!value) return <Loading what="the trace" />;
  return (
    <div class="trace" data-testid="turn-trace">
      <p>
        Workflow <code>{turnId}</code>
        {value.workflow
          ? `: ${value.workflow.status}, ${formatNumber(value.workflow.history_length)} history events, started ${formatDate(value.workflow.started_at)}`
          : ': no longer kept by Temporal'}
        {value.workflow ? (
          <>
            {' '}
            · <TemporalLink url={value.workflow.temporal_url} workflowId={turnId} />
          </>
        ) : null}
      </p>
      {value.pending_approval ? (
        <p>
          Waiting for approval of <code>{value.pending_approval.tool}</code> until{' '}
          {formatDate(value.pending_approval.expires_at)}.
        </p>
      ) : null}
      <p>
        Tools:{' '}
        {value.tool_calls.length
          ? value.tool_calls
              .map((call) => `${call.name}${call.ok === null ? '' : call.ok ? ' (ok)' : ' (failed)'}`)
              .join(', ')
          : 'none'}
      </p>
      {value.attempts ? <Attempts attempts={value.attempts} /> : <p class="muted">{value.trace_error}</p>}
      {value.ledger.length ? (
        <table>
          <caption>Ledger entries</caption>
          <thead>
            <tr>
              <th scope="col">Kind</th>
              <th scope="col">Model</th>
              <th scope="col" class="number">
                Tokens in / out
              </th>
              <th scope="col" class="number">
                Credits
              </th>
            </tr>
          </thead>
          <tbody>
            {value.ledger.map((entry) => (
              <tr key={entry.id}>
                <td>
                  {entry.kind}
                  {entry.workflow_id === value.routing_workflow_id ? ' (routing)' : ''}
                </td>
                <td>{entry.model ?? '—'}</td>
                <td class="number">
                  {entry.prompt_tokens === null
                    ? '—'
                    : `${formatNumber(entry.prompt_tokens)} / ${formatNumber(entry.completion_tokens)}`}
                </td>
                <td class="number">
                  {entry.kind === 'settle' ? formatCredits(-entry.amount) : formatNumber(entry.amount)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}

function Attempts({ attempts }: { attempts: Attempt[] }) {
  if (attempts.length === 0) return <p class="muted">No provider attempt yet.</p>;
  return (
    <table>
      <caption>Provider attempts</caption>
      <thead>
        <tr>
          <th scope="col">#</th>
          <th scope="col">Provider and model</th>
          <th scope="col">Outcome</th>
          <th scope="col" class="number">
            Latency
          </th>
        </tr>
      </thead>
      <tbody>
        {attempts.map((attempt, index) => (
          <tr key={index}>
            <td>{attempt.attempt}</td>
            <td>
              {attempt.provider} · {attempt.model}
            </td>
            <td class="wrap">
              {attempt.outcome}
              {attempt.status ? ` (HTTP ${attempt.status})` : ''}
              {attempt.error ? `: ${attempt.error}` : ''}
            </td>
            <td class="number">{formatNumber(Math.round(attempt.latency_ms))} ms</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/**
 * The gateway documents a request's attempts loosely (`unknown[]`); they are the same attempts a turn's trace
 * documents, checked here rather than cast.
 */
function isAttempt(value: unknown): value is Attempt {
  const attempt = value as Partial<Attempt> | null;
  return (
    typeof attempt === 'object' &&
    attempt !== null &&
    typeof attempt.attempt === 'number' &&
    typeof attempt.provider === 'string' &&
    typeof attempt.model === 'string' &&
    typeof attempt.outcome === 'string' &&
    typeof attempt.latency_ms === 'number'
  );
}

function Requests({ user }: { user: string }) {
  const requests = useLoad(
    async () =>
      (
        await data(
          api.GET('/admin/api/requests', { params: { query: { limit: 25, ...(user ? { user_id: user } : {}) } } }),
        )
      ).requests,
    [user],
  );
  return (
    <section class="card" aria-labelledby="requests-title">
      <div class="item-head">
        <h2 id="requests-title">Recent requests</h2>
        <button type="button" class="secondary" onClick={() => requests.reload()}>
          Refresh requests
        </button>
      </div>
      <p class="muted">
        Completions through the gateway’s API (chat completions, Messages, and Responses, whose ids begin{' '}
        <code>resp_</code>, background ones included) and the model calls the agent service makes for routing and
        suggestions, as Temporal lists them (running ones first).
      </p>
      <ErrorNote error={requests.error} />
      {requests.value ? (
        requests.value.length === 0 ? (
          <p class="muted">No requests.</p>
        ) : (
          <ScrollTable
            label="Recent requests"
            caption="Recent completion requests"
            columns={['Started', 'User', 'Model', 'Status', 'Trace']}
          >
            {requests.value.map((request) => (
              <RequestRow key={request.run_id} request={request} />
            ))}
          </ScrollTable>
        )
      ) : requests.error ? null : (
        <Loading what="requests" />
      )}
    </section>
  );
}

function RequestRow({ request }: { request: Request }) {
  return (
    <TraceRow
      testId="request"
      traceKey={request.run_id}
      what={`request ${request.request_id}`}
      temporal={{ url: request.temporal_url, workflowId: request.workflow_id }}
      columns={5}
      trace={() => <RequestTrace requestId={request.request_id} />}
    >
      <td>{formatDate(request.started_at)}</td>
      <td>
        <UserCell userId={request.user_id} />
      </td>
      <td>{request.model ?? '—'}</td>
      <td>{request.status}</td>
    </TraceRow>
  );
}

function RequestTrace({ requestId }: { requestId: string }) {
  const trace = useLoad(
    () => data(api.GET('/admin/api/requests/{request_id}', { params: { path: { request_id: requestId } } })),
    [requestId],
  );
  if (trace.error) return <ErrorNote error={trace.error} />;
  const value = trace.value?.trace;
  if (!value) return <Loading what="the trace" />;
  return (
    <div class="trace" data-testid="request-trace">
      <p>
        Request <code>{value.id}</code>: {value.status}, asked for {value.requested_model ?? '—'}
        {value.status === 'completed' ? `, served by ${value.provider} · ${value.model}` : ''}
        {value.status === 'failed' ? `: ${value.error.message}` : ''}.
      </p>
      {value.status === 'completed' ? (
        <p>
          {formatNumber(value.usage.prompt_tokens)} tokens in, {formatNumber(value.usage.completion_tokens)} out
          {value.usage_estimated ? ' (counted here: the provider reported none)' : ''}.
        </p>
      ) : null}
      {value.attempts.every(isAttempt) ? <Attempts attempts={value.attempts} /> : <Json value={value.attempts} />}
    </div>
  );
}
