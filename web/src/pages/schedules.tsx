/**
 * Scheduled tasks: create one with a cron helper (common schedules to pick, the cron as text, and its next runs in
 * the person's time zone, computed here by cron-parser, the library the service checks crons with), pause, resume,
 * delete, and see the last run and its answer (the task's own session, `schedule:<id>`).
 */
import { CronExpressionParser } from 'cron-parser';
import { useMemo, useState } from 'preact/hooks';
import { api, data, type Answer } from '../api/client.ts';
import { ErrorNote, formatDate, Loading, PageHeader, StatusNote, useAction, useLoad } from '../components/ui.tsx';

type Task = Answer<'/schedule/tasks', 'get'>['tasks'][number];

const presets: Array<[string, string]> = [
  ['0 9 * * *', 'Every day at 9:00'],
  ['0 9 * * 1-5', 'Weekdays at 9:00'],
  ['0 9 * * 1', 'Mondays at 9:00'],
  ['0 * * * *', 'Every hour'],
  ['*/15 * * * *', 'Every 15 minutes'],
  ['0 8 1 * *', 'The 1st of each month at 8:00'],
];

const localZone = Intl.DateTimeFormat().resolvedOptions().timeZone;

/** The next `count` runs of a cron read in `timezone`, or why it cannot be read. */
export function nextRuns(cron: string, timezone: string, count = 5): { runs: Date[]; error: string | null } {
  try {
    const expression = CronExpressionParser.parse(cron.trim(), { tz: timezone, strict: false });
    return { runs: expression.take(count).map((date) => date.toDate()), error: null };
  } catch (error) {
    return { runs: [], error: (error as Error).message };
  }
}

const inZone = (zone: string) =>
  new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium', timeZone: zone });

export function SchedulesPage() {
  const tasks = useLoad(async () => (await data(api.GET('/schedule/tasks'))).tasks, []);
  const agents = useLoad(async () => (await data(api.GET('/agents'))).agents, []);
  const [notice, setNotice] = useState<string | null>(null);
  const action = useAction();

  const change = async (task: Task, body: { enabled: boolean }, message: string) => {
    if (await action.run(() => data(api.PATCH('/schedule/tasks/{id}', { params: { path: { id: task.id } }, body })))) {
      setNotice(message);
      await tasks.reload();
    }
  };

  return (
    <section class="page" aria-labelledby="page-title">
      <PageHeader title="Schedules">
        <button type="button" class="secondary" onClick={() => tasks.reload()}>
          Refresh
        </button>
      </PageHeader>
      <ScheduleForm
        agents={agents.value ?? []}
        onCreated={async () => {
          setNotice('Schedule created.');
          await tasks.reload();
        }}
      />
      {notice ? <StatusNote>{notice}</StatusNote> : null}
      <ErrorNote error={tasks.error} />
      <ErrorNote error={action.error} />
      <h2>Your schedules</h2>
      {tasks.value ? (
        tasks.value.length === 0 ? (
          <p class="muted">No schedule yet.</p>
        ) : (
          <ul class="list" aria-label="Schedules">
            {tasks.value.map((task) => (
              <li key={task.id} data-testid="schedule">
                <div class="item-head">
                  <h3>
                    {task.agent_id}: {task.message.slice(0, 80)}
                  </h3>
                  <span class="badge">{task.enabled ? 'active' : 'paused'}</span>
                </div>
                <p class="muted">
                  <code>{task.cron}</code> in {task.timezone}
                  {task.next_runs[0] ? ` · next run ${inZone(localZone).format(new Date(task.next_runs[0]))}` : ''}
                </p>
                <p class="last-run">
                  {task.last_run ? (
                    <>
                      Last run {formatDate(task.last_run.at)}: <strong>{task.last_run.status}</strong>
                      {task.last_run.error ? ` (${task.last_run.error})` : ''} ·{' '}
                      <a href={`/chats/${encodeURIComponent(task.session_id)}`}>See its answer</a>
                    </>
                  ) : (
                    'Not run yet'
                  )}
                </p>
                <div class="button-row">
                  {task.enabled ? (
                    <button type="button" class="secondary" onClick={() => change(task, { enabled: false }, 'Paused.')}>
                      Pause
                    </button>
                  ) : (
                    <button type="button" class="secondary" onClick={() => change(task, { enabled: true }, 'Resumed.')}>
                      Resume
                    </button>
                  )}
                  <button
                    type="button"
                    class="danger"
                    onClick={async () => {
                      if (
                        await action.run(() =>
                          data(api.DELETE('/schedule/tasks/{id}', { params: { path: { id: task.id } } })),
                        )
                      ) {
                        setNotice('Schedule deleted.');
                        await tasks.reload();
                      }
                    }}
                  >
                    Delete
                  </button>
                </div>
              </li>
            ))}
          </ul>
        )
      ) : tasks.error ? null : (
        <Loading what="schedules" />
      )}
    </section>
  );
}

function ScheduleForm(props: { agents: Array<{ id: string; name: string }>; onCreated(): Promise<void> }) {
  const [cron, setCron] = useState(presets[0]![0]);
  const [timezone, setTimezone] = useState(localZone);
  const [agent, setAgent] = useState('general');
  const [message, setMessage] = useState('');
  const action = useAction();
  const preview = useMemo(() => nextRuns(cron, timezone), [cron, timezone]);
  const zones = useMemo(() => {
    const supported = (Intl as { supportedValuesOf?: (key: string) => string[] }).supportedValuesOf?.('timeZone') ?? [];
    return [...new Set(['UTC', localZone, ...supported])];
  }, []);
  const format = inZone(localZone);

  return (
    <form
      class="card"
      aria-labelledby="schedule-form-title"
      onSubmit={async (event) => {
        event.preventDefault();
        if (
          await action.run(() =>
            data(
              api.POST('/schedule/tasks', {
                body: { cron: cron.trim(), timezone, agent_id: agent, message: message.trim() },
              }),
            ),
          )
        ) {
          setMessage('');
          await props.onCreated();
        }
      }}
    >
      <h2 id="schedule-form-title">New schedule</h2>
      <div class="field">
        <label for="schedule-agent">Agent</label>
        <select id="schedule-agent" value={agent} onChange={(e) => setAgent((e.target as HTMLSelectElement).value)}>
          {props.agents.map((item) => (
            <option key={item.id} value={item.id}>
              {item.name}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="schedule-message">What to ask it each time</label>
        <textarea
          id="schedule-message"
          rows={2}
          required
          value={message}
          onInput={(e) => setMessage((e.target as HTMLTextAreaElement).value)}
        />
      </div>
      <div class="field">
        <label for="schedule-preset">When</label>
        <select
          id="schedule-preset"
          value={presets.some(([value]) => value === cron) ? cron : ''}
          onChange={(e) => {
            const value = (e.target as HTMLSelectElement).value;
            if (value) setCron(value);
          }}
        >
          {presets.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
          <option value="">Custom cron…</option>
        </select>
      </div>
      <div class="field">
        <label for="schedule-cron">Cron (minute hour day month weekday, or seconds first)</label>
        <input
          id="schedule-cron"
          required
          value={cron}
          aria-describedby="schedule-next"
          onInput={(e) => setCron((e.target as HTMLInputElement).value)}
        />
      </div>
      <div class="field">
        <label for="schedule-zone">Time zone the cron is read in</label>
        <select
          id="schedule-zone"
          value={timezone}
          onChange={(e) => setTimezone((e.target as HTMLSelectElement).value)}
        >
          {zones.map((zone) => (
            <option key={zone} value={zone}>
              {zone}
            </option>
          ))}
        </select>
      </div>
      <div id="schedule-next" aria-live="polite">
        {preview.error ? (
          <p class="note error">This cron cannot be read: {preview.error}</p>
        ) : (
          <>
            <p class="muted">Next runs ({localZone}):</p>
            <ol class="next-runs">
              {preview.runs.map((run) => (
                <li key={run.getTime()}>{format.format(run)}</li>
              ))}
            </ol>
          </>
        )}
      </div>
      <button type="submit" disabled={action.busy || Boolean(preview.error)}>
        Create schedule
      </button>
      <ErrorNote error={action.error} />
    </form>
  );
}
