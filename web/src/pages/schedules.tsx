/**
 * Scheduled tasks: create one with a cron helper (common schedules to pick, the cron as text, and its next runs in
 * the person's time zone, computed here by cron-parser, the library the service checks crons with), pause, resume,
 * delete, and see the last run and its answer (the task's own session, `schedule:<id>`).
 */
import { CronExpressionParser } from 'cron-parser';
import { useMemo, useState } from 'preact/hooks';
import { api, data, type Answer } from '../api/client.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { Form, FormActions, SelectField, TextArea, TextField } from '../components/form.tsx';
import { Page } from '../components/layout.tsx';
import { Badge, ItemCard, ItemList } from '../components/list.tsx';
import { ErrorNote, formatDate, StatusNote, useAction, useLoad, WhenLoaded } from '../components/ui.tsx';

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

  const change = async (call: () => Promise<unknown>, message: string) => {
    if (await action.run(call)) {
      setNotice(message);
      await tasks.reload();
    }
  };
  const pause = (task: Task, enabled: boolean) =>
    change(
      () => data(api.PATCH('/schedule/tasks/{id}', { params: { path: { id: task.id } }, body: { enabled } })),
      enabled ? 'Resumed.' : 'Paused.',
    );

  return (
    <Page
      title="Schedules"
      actions={
        <button type="button" class="secondary" onClick={() => tasks.reload()}>
          Refresh
        </button>
      }
    >
      <ScheduleForm
        agents={agents.value ?? []}
        onCreated={async () => {
          setNotice('Schedule created.');
          await tasks.reload();
        }}
      />
      <StatusNote>{notice}</StatusNote>
      <ErrorNote error={action.error} />
      <h2>Your schedules</h2>
      <WhenLoaded state={tasks} what="schedules">
        {(list) => (
          <ItemList label="Schedules" items={list} empty="No schedule yet.">
            {(task) => (
              <ItemCard
                key={task.id}
                testId="schedule"
                title={`${task.agent_id}: ${task.message.slice(0, 80)}`}
                aside={<Badge>{task.enabled ? 'active' : 'paused'}</Badge>}
                actions={
                  <>
                    <button type="button" class="secondary" onClick={() => pause(task, !task.enabled)}>
                      {task.enabled ? 'Pause' : 'Resume'}
                    </button>
                    <ConfirmButton
                      label={`Delete the schedule ${task.agent_id}: ${task.message.slice(0, 40)}`}
                      warning="It stops for good; its answers stay in its chat."
                      confirm="Yes, delete this schedule"
                      onConfirm={() =>
                        change(
                          () => data(api.DELETE('/schedule/tasks/{id}', { params: { path: { id: task.id } } })),
                          'Schedule deleted.',
                        )
                      }
                    >
                      Delete
                    </ConfirmButton>
                  </>
                }
              >
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
              </ItemCard>
            )}
          </ItemList>
        )}
      </WhenLoaded>
    </Page>
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
    <Form
      title="New schedule"
      onSubmit={async () => {
        const body = { cron: cron.trim(), timezone, agent_id: agent, message: message.trim() };
        if (await action.run(() => data(api.POST('/schedule/tasks', { body })))) {
          setMessage('');
          await props.onCreated();
        }
      }}
    >
      <SelectField
        id="schedule-agent"
        label="Agent"
        value={agent}
        options={props.agents.map((item) => ({ value: item.id, label: item.name }))}
        onValue={setAgent}
      />
      <TextArea
        id="schedule-message"
        label="What to ask it each time"
        rows={2}
        required
        value={message}
        onValue={setMessage}
      />
      <SelectField
        id="schedule-preset"
        label="When"
        value={presets.some(([value]) => value === cron) ? cron : ''}
        options={[...presets.map(([value, label]) => ({ value, label })), { value: '', label: 'Custom cron…' }]}
        onValue={(value) => {
          if (value) setCron(value);
        }}
      />
      <TextField
        id="schedule-cron"
        label="Cron (minute hour day month weekday, or seconds first)"
        required
        describedBy="schedule-next"
        value={cron}
        onValue={setCron}
      />
      <SelectField
        id="schedule-zone"
        label="Time zone the cron is read in"
        value={timezone}
        options={zones}
        onValue={setTimezone}
      />
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
      <FormActions submit="Create schedule" action={action} disabled={Boolean(preview.error)} />
    </Form>
  );
}
