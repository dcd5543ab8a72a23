/**
 * The console's overview (`/admin`): the platform's figures for a period (turns, schedules, media jobs and webhook
 * runs by status: `GET /admin/api/overview`), provider and media engine health from the circuit breakers
 * (`GET /admin/api/providers`) and the workflows that failed in the last day (`GET /admin/api/workflows/failed`),
 * each linked to the Temporal Web UI.
 */
import { useState } from 'preact/hooks';
import { pagePaths } from '../../routes.ts';
import { api, data } from '../api/client.ts';
import { ErrorNote, formatDate, formatNumber, Loading, useLoad } from '../components/ui.tsx';
import { AdminGate, HealthBadge, StatusCounts, ScrollTable, TemporalLink } from './shared.tsx';

export function AdminOverviewPage() {
  return (
    <AdminGate title="Operator console">
      <Figures />
      <CapacityQueue />
      <Providers />
      <FailedWorkflows />
    </AdminGate>
  );
}

function Figures() {
  const [days, setDays] = useState(7);
  const overview = useLoad(async () => data(api.GET('/admin/api/overview', { params: { query: { days } } })), [days]);
  const value = overview.value;
  return (
    <section class="card" aria-labelledby="figures-title">
      <div class="item-head">
        <h2 id="figures-title">The platform</h2>
        <label>
          <span class="visually-hidden">Period</span>
          <select value={days} onChange={(event) => setDays(Number((event.target as HTMLSelectElement).value))}>
            <option value={1}>Today</option>
            <option value={7}>Last 7 days</option>
            <option value={30}>Last 30 days</option>
          </select>
        </label>
      </div>
      <ErrorNote error={overview.error} />
      {value ? (
        <>
          <p data-testid="platform-totals">
            {count(value.totals.turns, 'turn', 'turns')} ({formatNumber(value.totals.failed_turns)} failed) ·{' '}
            {count(value.totals.messages, 'message', 'messages')} ·{' '}
            {count(value.totals.tool_calls, 'tool call', 'tool calls')} ·{' '}
            {count(value.totals.credits_used, 'credit', 'credits')} used
          </p>
          <div class="grid">
            <div>
              <h3>Schedules</h3>
              <p>
                {formatNumber(value.schedules.total)} in all: {formatNumber(value.schedules.active)} active,{' '}
                {formatNumber(value.schedules.paused)} paused.
              </p>
              <StatusCounts counts={value.schedules.last_run_by_status} caption="Schedules by their last run" />
            </div>
            <div>
              <h3>Media jobs</h3>
              <StatusCounts counts={value.media_jobs.by_status} caption="Media jobs by status" />
            </div>
            <div>
              <h3>Webhook runs</h3>
              {value.webhook_runs ? (
                <StatusCounts counts={value.webhook_runs.by_status} caption="Webhook runs by status" />
              ) : (
                <p class="muted">This deployment records no webhook runs.</p>
              )}
            </div>
          </div>
        </>
      ) : overview.error ? null : (
        <Loading what="the figures" />
      )}
    </section>
  );
}

/** The durable capacity queue (`GET /admin/api/queue`, docs/capacity-queue.md): who waits for what, and how long. */
function CapacityQueue() {
  const queue = useLoad(() => data(api.GET('/admin/api/queue')), []);
  const groups = queue.value?.groups;
  const waiting = groups?.reduce((sum, group) => sum + group.waiting, 0) ?? 0;
  return (
    <section class="card" aria-labelledby="queue-title">
      <div class="item-head">
        <h2 id="queue-title">Capacity queue</h2>
        <button type="button" class="secondary" onClick={() => queue.reload()}>
          Refresh queue
        </button>
      </div>
      <ErrorNote error={queue.error} />
      {groups ? (
        groups.length === 0 ? (
          <p class="muted" data-testid="queue-empty">
            No job waits for capacity, and none holds a slot.
          </p>
        ) : (
          <>
            <p data-testid="queue-totals">{count(waiting, 'job waits', 'jobs wait')} for capacity.</p>
            <ScrollTable
              label="Jobs waiting for capacity and holding slots"
              caption="The capacity queue by kind, model, priority and plan"
              columns={[
                'Kind',
                'Model',
                'Priority',
                'Plan',
                { title: 'Waiting', number: true },
                { title: 'Running', number: true },
                { title: 'Longest wait', number: true },
              ]}
            >
              {groups.map((group) => (
                <tr key={`${group.kind}/${group.model}/${group.priority}/${group.plan}`}>
                  <th scope="row">{group.kind}</th>
                  <td>{group.model}</td>
                  <td>{group.priority}</td>
                  <td>{group.plan}</td>
                  <td class="number">{formatNumber(group.waiting)}</td>
                  <td class="number">{formatNumber(group.holding)}</td>
                  <td class="number">{group.waiting ? `${formatNumber(group.oldest_wait_seconds)} s` : '–'}</td>
                </tr>
              ))}
            </ScrollTable>
          </>
        )
      ) : queue.error ? null : (
        <Loading what="the queue" />
      )}
    </section>
  );
}

const count = (value: number, one: string, many: string) => `${formatNumber(value)} ${value === 1 ? one : many}`;

function Providers() {
  const providers = useLoad(() => data(api.GET('/admin/api/providers')), []);
  const value = providers.value;
  return (
    <section class="card" aria-labelledby="providers-title">
      <div class="item-head">
        <h2 id="providers-title">Providers</h2>
        <button type="button" class="secondary" onClick={() => providers.reload()}>
          Refresh providers
        </button>
      </div>
      <ErrorNote error={providers.error} />
      {value ? (
        <>
          <p class="muted">
            A breaker opens after {value.breaker.failure_threshold} failures in a row; failover skips the provider until
            one trial call succeeds, {Math.round(value.breaker.cooldown_ms / 1000)} s later.
          </p>
          <ScrollTable
            label="Providers and their circuit breakers"
            caption="Providers and their circuit breakers"
            columns={['Provider', 'Health', 'Breaker', 'Last error']}
          >
            {value.providers.map((provider) => (
              <tr key={provider.id} data-testid={`provider-${provider.id}`}>
                <th scope="row">
                  {provider.name}
                  <br />
                  <small class="muted">
                    {count(provider.models.length, 'model', 'models')} · {provider.protocol}
                  </small>
                </th>
                <td>
                  <HealthBadge health={provider.health} />
                </td>
                <td>
                  {provider.circuit.state.replace('_', '-')}
                  {provider.circuit.consecutive_failures ? `, ${provider.circuit.consecutive_failures} failures` : ''}
                  {provider.circuit.opened_at ? (
                    <>
                      <br />
                      <small class="muted">opened {formatDate(provider.circuit.opened_at)}</small>
                    </>
                  ) : null}
                </td>
                <td class="wrap">{provider.circuit.last_error ?? '—'}</td>
              </tr>
            ))}
          </ScrollTable>
          <h3>Media engines</h3>
          {value.media_engines.length === 0 ? (
            <p class="muted">No media engine is configured.</p>
          ) : (
            <ScrollTable
              label="Media engines and their circuit breakers"
              caption="Media engines and their circuit breakers"
              columns={['Engine', 'Health', 'Last error']}
            >
              {value.media_engines.map((engine) => (
                <tr key={engine.id}>
                  <th scope="row">
                    {engine.id}
                    <br />
                    <small class="muted">{engine.capabilities.join(', ')}</small>
                  </th>
                  <td>
                    <HealthBadge health={engine.health} />
                  </td>
                  <td class="wrap">{engine.circuit.last_error ?? '—'}</td>
                </tr>
              ))}
            </ScrollTable>
          )}
        </>
      ) : providers.error ? null : (
        <Loading what="the providers" />
      )}
    </section>
  );
}

function FailedWorkflows() {
  const failed = useLoad(() => data(api.GET('/admin/api/workflows/failed', { params: { query: { hours: 24 } } })), []);
  const value = failed.value;
  return (
    <section class="card" aria-labelledby="failed-title">
      <div class="item-head">
        <h2 id="failed-title">Failed workflows, last 24 hours</h2>
        <button type="button" class="secondary" onClick={() => failed.reload()}>
          Refresh failed workflows
        </button>
      </div>
      <ErrorNote error={failed.error} />
      {value ? (
        value.workflows.length === 0 ? (
          <p class="muted">No workflow failed since {formatDate(value.since)}.</p>
        ) : (
          <ScrollTable
            label="Failed workflows"
            caption="Workflows that failed or timed out in the last 24 hours"
            columns={['Closed', 'Kind', 'User', 'Failure', 'Workflow']}
          >
            {value.workflows.map((workflow) => (
              <tr key={workflow.run_id} data-testid="failed-workflow">
                <td>{formatDate(workflow.closed_at)}</td>
                <td>
                  {workflow.kind ?? workflow.type}
                  {workflow.status === 'timed_out' ? ' (timed out)' : ''}
                </td>
                <td>
                  {workflow.user_id ? (
                    <a href={`${pagePaths.adminUsers}/${encodeURIComponent(workflow.user_id)}`}>{workflow.user_id}</a>
                  ) : (
                    '—'
                  )}
                </td>
                <td class="wrap">{workflow.failure ?? '—'}</td>
                <td>
                  <TemporalLink url={workflow.temporal_url} workflowId={workflow.workflow_id} />
                </td>
              </tr>
            ))}
          </ScrollTable>
        )
      ) : failed.error ? null : (
        <Loading what="the failed workflows" />
      )}
    </section>
  );
}
