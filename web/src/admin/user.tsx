/**
 * One user in the console (`/admin/users/{id}`): the account and its credits, the plan and custom limits changed with
 * a reason (`PATCH /admin/api/users/{id}/account`, the gateway's own account change), a credit adjustment with its
 * reason (`POST …/credits`), the keys with a revoke confirmed with a reason (`POST …/keys/{key_id}/revoke`), the
 * credit ledger newest first (`GET …/ledger`, a kind at a time if wished, older pages on request), the latest turns
 * and the user's entries of the audit log (`GET /admin/api/audit?user_id=…`), which every action here adds to.
 *
 * The adjustment's Idempotency-Key is made when the form is filled in and kept until the adjustment is made: a
 * second click, or a retry after a lost answer, sends the same key, and the service answers the first adjustment
 * without moving credits again. The key lives in the page's memory only.
 */
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { pagePaths } from '../../routes.ts';
import { api, data, type Answer } from '../api/client.ts';
import { ErrorNote, formatDate, formatNumber, Loading, StatusNote, useAction, useLoad } from '../components/ui.tsx';
import { AuditLog, describeLimits, type Limits } from './audit.tsx';
import {
  AdminGate,
  formatCredits,
  OlderEntries,
  ReasonField,
  ScrollTable,
  TemporalLink,
  useOlderPages,
} from './shared.tsx';

type Detail = Answer<'/admin/api/users/{user_id}', 'get'>;
type PlanInfo = Answer<'/billing/plans', 'get'>['plans'][number];
type PlanName = PlanInfo['id'];
type Key = Detail['api_keys'][number];
type LedgerPage = Answer<'/admin/api/users/{user_id}/ledger', 'get'>;

const kinds = ['adjust', 'grant', 'purchase', 'settle', 'reserve', 'release'] as const;

export function AdminUserPage() {
  const { params } = useRoute();
  const userId = decodeURIComponent(params.user_id ?? '');
  const detail = useLoad(
    () => data(api.GET('/admin/api/users/{user_id}', { params: { path: { user_id: userId } } })),
    [userId],
  );
  const [ledgerVersion, setLedgerVersion] = useState(0);
  // Bumped by every action of the page: the audit log shows its entry.
  const [auditVersion, setAuditVersion] = useState(0);
  const [planNotice, setPlanNotice] = useState<string | null>(null);
  const user = detail.value?.user;
  const acted = async () => {
    setAuditVersion((version) => version + 1);
    await detail.reload();
  };
  return (
    <AdminGate title={user ? (user.email ?? user.id) : 'User'}>
      <p>
        <a href={pagePaths.adminUsers}>All users</a>
      </p>
      <ErrorNote error={detail.error} />
      {detail.value && user ? (
        <>
          <section class="card" aria-labelledby="account-title">
            <h2 id="account-title">Account</h2>
            <dl class="facts">
              <dt>Id</dt>
              <dd>
                <code>{user.id}</code>
              </dd>
              <dt>Plan</dt>
              <dd data-testid="user-plan">{user.plan}</dd>
              <dt>Custom limits</dt>
              <dd>{describeLimits(user.custom_limits as Limits | null)}</dd>
              <dt>Role</dt>
              <dd>{user.admin ? (user.role === 'admin' ? 'admin' : 'admin (ADMIN_EMAILS)') : user.role}</dd>
              <dt>Credits</dt>
              <dd data-testid="user-credits">
                {formatNumber(user.credits.available)} available ({formatNumber(user.credits.balance)} balance,{' '}
                {formatNumber(user.credits.held)} held by running work)
              </dd>
              <dt>Joined</dt>
              <dd>{formatDate(user.created_at)}</dd>
              <dt>Last web login</dt>
              <dd>{formatDate(user.last_login_at)}</dd>
            </dl>
          </section>
          <PlanAndLimits
            // Made again from the account once it changed, so the form shows what is now in force.
            key={`${user.plan} ${JSON.stringify(user.custom_limits)}`}
            userId={user.id}
            plan={user.plan as PlanName}
            limits={user.custom_limits as Limits | null}
            notice={planNotice}
            onChanged={async (notice) => {
              setLedgerVersion((version) => version + 1);
              await acted();
              // Once the page shows the account as changed.
              setPlanNotice(notice);
            }}
          />
          <AdjustCredits
            userId={user.id}
            onAdjusted={async () => {
              setLedgerVersion((version) => version + 1);
              await acted();
            }}
          />
          <Keys userId={user.id} keys={detail.value.api_keys} reload={acted} />
          <Ledger userId={user.id} version={ledgerVersion} />
          <Turns userId={user.id} />
          <AuditLog userId={user.id} showUser={false} version={auditVersion} />
        </>
      ) : detail.error ? null : (
        <Loading what="the user" />
      )}
    </AdminGate>
  );
}

/** A window's limit in the form: the plan's, none, or a number. */
type WindowChoice = 'plan' | 'none' | 'number';
type ModelsChoice = 'plan' | 'all' | 'list';

function windowChoice(value: number | null | undefined): [WindowChoice, string] {
  return value === undefined ? ['plan', ''] : value === null ? ['none', ''] : ['number', String(value)];
}

/** Limits in one key order, null when none is set (as the account API clears them): comparable as JSON. */
function normalise(limits: Limits | null | undefined): Limits | null {
  if (!limits) return null;
  const result: Limits = {};
  if (limits.per_hour !== undefined) result.per_hour = limits.per_hour;
  if (limits.per_day !== undefined) result.per_day = limits.per_day;
  if (limits.models !== undefined) result.models = limits.models;
  return Object.keys(result).length > 0 ? result : null;
}

/**
 * The plan and the custom limits (`PATCH /admin/api/users/{id}/account`, the gateway's account change): a plan of the
 * platform's (`GET /billing/plans`), each window's limit (the plan's, none, or a number) and the models (the plan's,
 * every model, or a list), and the reason the audit log records. Only what changed is sent.
 */
function PlanAndLimits(props: {
  userId: string;
  plan: PlanName;
  limits: Limits | null;
  notice: string | null;
  onChanged(notice: string): Promise<void>;
}) {
  const plans = useLoad(async () => (await data(api.GET('/billing/plans'))).plans, []);
  const current = normalise(props.limits);
  const [plan, setPlan] = useState<PlanName>(props.plan);
  const [hour, setHour] = useState(windowChoice(current?.per_hour));
  const [day, setDay] = useState(windowChoice(current?.per_day));
  const [models, setModels] = useState<[ModelsChoice, string]>(
    current?.models === undefined
      ? ['plan', '']
      : current.models === 'all'
        ? ['all', '']
        : ['list', current.models.join(', ')],
  );
  const [reason, setReason] = useState('');
  const [unchanged, setUnchanged] = useState(false);
  const action = useAction();
  const chosen = plans.value?.find((entry) => entry.id === plan);

  const limits = (): Limits | null => {
    const next: Limits = {};
    if (hour[0] !== 'plan') next.per_hour = hour[0] === 'none' ? null : Number(hour[1]);
    if (day[0] !== 'plan') next.per_day = day[0] === 'none' ? null : Number(day[1]);
    if (models[0] === 'all') next.models = 'all';
    if (models[0] === 'list') next.models = models[1].split(/[\s,]+/).filter(Boolean);
    return normalise(next);
  };

  return (
    <form
      class="card"
      aria-labelledby="plan-title"
      onSubmit={async (event) => {
        event.preventDefault();
        if (action.busy) return;
        const wanted = limits();
        const change = {
          ...(plan !== props.plan ? { plan } : {}),
          ...(JSON.stringify(wanted) !== JSON.stringify(current) ? { custom_limits: wanted } : {}),
        };
        setUnchanged(Object.keys(change).length === 0);
        if (Object.keys(change).length === 0) return;
        await action.run(async () => {
          const account = await data(
            api.PATCH('/admin/api/users/{user_id}/account', {
              params: { path: { user_id: props.userId } },
              body: { ...change, reason },
            }),
          );
          await props.onChanged(
            `Saved: plan ${account.plan}, limits ${describeLimits(wanted)}. The account’s next request meets them.`,
          );
        });
      }}
    >
      <h2 id="plan-title">Plan and limits</h2>
      <p class="muted">
        A new plan starts a new cycle with its monthly credits. Limits set here replace the plan’s for this account
        alone. Both hold from the account’s next request, and the audit log keeps your reason.
      </p>
      <ErrorNote error={plans.error} prefix="The plans could not be read" />
      <div class="inline-form">
        <div class="field">
          <label for="plan-select">Plan</label>
          <select
            id="plan-select"
            value={plan}
            onChange={(event) => setPlan((event.target as HTMLSelectElement).value as PlanName)}
          >
            {(plans.value ?? [{ id: props.plan } as PlanInfo]).map((entry) => (
              <option key={entry.id} value={entry.id}>
                {entry.monthly_credits === undefined
                  ? entry.id
                  : `${entry.id}: ${formatNumber(entry.monthly_credits)} credits a month`}
              </option>
            ))}
          </select>
        </div>
        <WindowField
          id="limit-hour"
          label="Requests an hour"
          countLabel="How many an hour"
          planLimit={chosen?.rate_limits.per_hour}
          value={hour}
          onChange={setHour}
        />
        <WindowField
          id="limit-day"
          label="Requests a day"
          countLabel="How many a day"
          planLimit={chosen?.rate_limits.per_day}
          value={day}
          onChange={setDay}
        />
        <div class="field">
          <label for="limit-models">Models</label>
          <select
            id="limit-models"
            value={models[0]}
            onChange={(event) => setModels([(event.target as HTMLSelectElement).value as ModelsChoice, models[1]])}
          >
            <option value="plan">
              The plan’s
              {chosen ? ` (${chosen.models === 'all' ? 'every model' : chosen.models.join(', ')})` : ''}
            </option>
            <option value="all">Every model</option>
            <option value="list">Only these</option>
          </select>
        </div>
        {models[0] === 'list' ? (
          <div class="field grow">
            <label for="limit-models-list">Model ids, separated by commas</label>
            <input
              id="limit-models-list"
              required
              value={models[1]}
              onInput={(event) => setModels(['list', (event.target as HTMLInputElement).value])}
            />
          </div>
        ) : null}
      </div>
      <div class="inline-form">
        <ReasonField id="plan-reason" label="Reason for the change" value={reason} onInput={setReason} />
        <button type="submit" disabled={action.busy}>
          Save plan and limits
        </button>
      </div>
      {unchanged ? <StatusNote>Nothing to save: that is the plan and the limits in force.</StatusNote> : null}
      {props.notice && !unchanged ? <StatusNote>{props.notice}</StatusNote> : null}
      <ErrorNote error={action.error} prefix="The change was refused" />
    </form>
  );
}

/** A window's limit: the plan's (named), none, or a number, whose field shows when chosen. */
function WindowField(props: {
  id: string;
  label: string;
  countLabel: string;
  planLimit: number | null | undefined;
  value: [WindowChoice, string];
  onChange(value: [WindowChoice, string]): void;
}) {
  const [choice, count] = props.value;
  const planLimit =
    props.planLimit === undefined
      ? ''
      : props.planLimit === null
        ? ' (no limit)'
        : ` (${formatNumber(props.planLimit)})`;
  return (
    <>
      <div class="field">
        <label for={props.id}>{props.label}</label>
        <select
          id={props.id}
          value={choice}
          onChange={(event) => props.onChange([(event.target as HTMLSelectElement).value as WindowChoice, count])}
        >
          <option value="plan">The plan’s{planLimit}</option>
          <option value="none">No limit</option>
          <option value="number">This many</option>
        </select>
      </div>
      {choice === 'number' ? (
        <div class="field">
          <label for={`${props.id}-count`}>{props.countLabel}</label>
          <input
            id={`${props.id}-count`}
            type="number"
            inputMode="numeric"
            min={1}
            step={1}
            required
            value={count}
            onInput={(event) => props.onChange(['number', (event.target as HTMLInputElement).value])}
          />
        </div>
      ) : null}
    </>
  );
}

function AdjustCredits({ userId, onAdjusted }: { userId: string; onAdjusted(): Promise<void> }) {
  const [amount, setAmount] = useState('');
  const [reason, setReason] = useState('');
  // One key per adjustment: made with the form, renewed once the service has made it.
  const [idempotencyKey, setIdempotencyKey] = useState(() => crypto.randomUUID());
  const [done, setDone] = useState<string | null>(null);
  const action = useAction();
  return (
    <form
      class="card"
      aria-labelledby="adjust-title"
      onSubmit={async (event) => {
        event.preventDefault();
        if (action.busy) return;
        setDone(null);
        await action.run(async () => {
          const answer = await data(
            api.POST('/admin/api/users/{user_id}/credits', {
              params: { path: { user_id: userId }, header: { 'idempotency-key': idempotencyKey } },
              body: { amount: Number(amount), reason },
            }),
          );
          setDone(
            `${answer.replayed ? 'Already made: ' : ''}${formatCredits(answer.entry.amount)} credits (“${answer.entry.note}”). ` +
              `Available now: ${formatNumber(answer.credits.available)}.`,
          );
          setAmount('');
          setReason('');
          setIdempotencyKey(crypto.randomUUID());
          await onAdjusted();
        });
      }}
    >
      <h2 id="adjust-title">Adjust credits</h2>
      <p class="muted">
        Written to the credit ledger with the reason and your name. A negative amount takes credits back (never more
        than are available).
      </p>
      <div class="inline-form">
        <div class="field">
          <label for="adjust-amount">Credits (negative to take back)</label>
          <input
            id="adjust-amount"
            type="number"
            inputMode="numeric"
            step={1}
            required
            value={amount}
            onInput={(event) => setAmount((event.target as HTMLInputElement).value)}
          />
        </div>
        <ReasonField id="adjust-reason" label="Reason" value={reason} onInput={setReason} />
        <button type="submit" disabled={action.busy}>
          Adjust credits
        </button>
      </div>
      {done ? <StatusNote>{done}</StatusNote> : null}
      <ErrorNote error={action.error} prefix="The adjustment was refused" />
    </form>
  );
}

function Keys({ userId, keys, reload }: { userId: string; keys: Key[]; reload(): Promise<void> }) {
  const [confirming, setConfirming] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const action = useAction();
  const name = (key: Key) => key.name ?? key.key_preview;
  return (
    <section class="card" aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      <ErrorNote error={action.error} prefix="Revoking failed" />
      {notice ? <StatusNote>{notice}</StatusNote> : null}
      {keys.length === 0 ? (
        <p class="muted">No keys.</p>
      ) : (
        <ScrollTable
          label="API keys"
          caption="The user’s API keys, newest first"
          columns={['Key', 'Created', 'Last used', 'State']}
        >
          {keys.map((key) => (
            <tr key={key.id}>
              <th scope="row">
                {key.name ?? 'Unnamed'}
                <br />
                <code>{key.key_preview}</code>
              </th>
              <td>{formatDate(key.created_at)}</td>
              <td>{formatDate(key.last_used_at)}</td>
              <td>
                {key.revoked_at ? (
                  `Revoked ${formatDate(key.revoked_at)}`
                ) : confirming === key.id ? (
                  <ConfirmRevoke
                    name={name(key)}
                    busy={action.busy}
                    onCancel={() => setConfirming(null)}
                    onConfirm={async (reason) => {
                      const revoked = await action.run(() =>
                        data(
                          api.POST('/admin/api/users/{user_id}/keys/{key_id}/revoke', {
                            params: { path: { user_id: userId, key_id: key.id } },
                            body: { reason },
                          }),
                        ),
                      );
                      setConfirming(null);
                      if (revoked) {
                        setNotice(`Revoked key ${name(key)}: it is refused from now on.`);
                        await reload();
                      }
                    }}
                  />
                ) : (
                  <button
                    type="button"
                    class="danger"
                    aria-label={`Revoke key ${name(key)}`}
                    onClick={() => {
                      setNotice(null);
                      setConfirming(key.id);
                    }}
                  >
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </ScrollTable>
      )}
    </section>
  );
}

/**
 * The confirm step of a revoke, which asks the reason the audit log keeps: focus lands on the reason, Enter revokes,
 * Escape or Cancel goes back.
 */
function ConfirmRevoke(props: { name: string; busy: boolean; onConfirm(reason: string): void; onCancel(): void }) {
  const [reason, setReason] = useState('');
  const input = useRef<HTMLInputElement>(null);
  const id = useId();
  useEffect(() => input.current?.focus(), []);
  return (
    <div
      role="group"
      aria-label={`Confirm revoking key ${props.name}`}
      onKeyDown={(event) => {
        if (event.key === 'Escape') props.onCancel();
      }}
    >
      <form
        class="confirm"
        onSubmit={(event) => {
          event.preventDefault();
          if (!props.busy) props.onConfirm(reason);
        }}
      >
        <span>Programs using it stop working at once.</span>
        <ReasonField id={id} label="Reason for revoking" value={reason} onInput={setReason} inputRef={input} />
        <button type="submit" class="danger" disabled={props.busy}>
          Yes, revoke {props.name}
        </button>
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
      </form>
    </div>
  );
}

function Ledger({ userId, version }: { userId: string; version: number }) {
  const [kind, setKind] = useState<(typeof kinds)[number] | ''>('');
  const pages = useOlderPages(
    (before) =>
      data(
        api.GET('/admin/api/users/{user_id}/ledger', {
          params: {
            path: { user_id: userId },
            query: { limit: 25, ...(kind ? { kind } : {}), ...(before ? { before } : {}) },
          },
        }),
      ),
    [userId, kind, version],
  );
  const { first, entries } = pages;
  return (
    <section class="card" aria-labelledby="ledger-title">
      <div class="item-head">
        <h2 id="ledger-title">Credit ledger</h2>
        <label>
          <span class="visually-hidden">Kind of entry</span>
          <select
            value={kind}
            onChange={(event) => setKind((event.target as HTMLSelectElement).value as (typeof kinds)[number] | '')}
          >
            <option value="">Every kind</option>
            {kinds.map((entry) => (
              <option key={entry} value={entry}>
                {entry}
              </option>
            ))}
          </select>
        </label>
      </div>
      <ErrorNote error={first.error} />
      {first.value ? (
        entries.length === 0 ? (
          <p class="muted">No entries.</p>
        ) : (
          <>
            <ScrollTable
              label="Credit ledger"
              caption="Credit ledger entries, newest first"
              columns={['When', 'Kind', { title: 'Credits', number: true }, 'Note or work']}
            >
              {entries.map((entry) => (
                <tr key={entry.id} data-testid="ledger-entry">
                  <td>{formatDate(entry.created_at)}</td>
                  <td>{entry.kind}</td>
                  <td class="number">{ledgerAmount(entry)}</td>
                  <td class="wrap">
                    {entry.note ?? (entry.model ? `${entry.model}` : '—')}
                    {entry.workflow_id ? (
                      <>
                        <br />
                        <small class="muted">{entry.workflow_id}</small>
                      </>
                    ) : null}
                  </td>
                </tr>
              ))}
            </ScrollTable>
            <OlderEntries pages={pages} />
          </>
        )
      ) : first.error ? null : (
        <Loading what="the ledger" />
      )}
    </section>
  );
}

/** What an entry did to the account: credited, charged, or held and released for running work. */
function ledgerAmount(entry: LedgerPage['entries'][number]): string {
  if (entry.kind === 'settle') return formatCredits(-entry.amount);
  if (entry.kind === 'reserve') return `${formatNumber(entry.amount)} held`;
  if (entry.kind === 'release') return `${formatNumber(entry.amount)} released`;
  return formatCredits(entry.amount);
}

function Turns({ userId }: { userId: string }) {
  const turns = useLoad(
    async () => (await data(api.GET('/admin/api/turns', { params: { query: { user_id: userId, limit: 5 } } }))).turns,
    [userId],
  );
  return (
    <section class="card" aria-labelledby="turns-title">
      <div class="item-head">
        <h2 id="turns-title">Latest turns</h2>
        <a href={`${pagePaths.adminActivity}?user=${encodeURIComponent(userId)}`}>Activity and traces</a>
      </div>
      <ErrorNote error={turns.error} />
      {turns.value ? (
        turns.value.length === 0 ? (
          <p class="muted">No turns yet.</p>
        ) : (
          <ul class="plain">
            {turns.value.map((turn) => (
              <li key={turn.turn_id}>
                {formatDate(turn.created_at)} · {turn.agent_id ?? 'chat'} · {turn.status} · {formatNumber(turn.credits)}{' '}
                credits · <TemporalLink url={turn.temporal_url} workflowId={turn.turn_id} />
              </li>
            ))}
          </ul>
        )
      ) : turns.error ? null : (
        <Loading what="turns" />
      )}
    </section>
  );
}
