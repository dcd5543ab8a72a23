/**
 * The console's audit log (`/admin/audit`, `?user=<id>&action=<action>` to narrow it; `GET /admin/api/audit`): every
 * operator action newest first, with who, what, to whom, when, why and the request's id, older pages on request. The
 * same list, one user's, is on that user's page (`AuditLog`).
 */
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { pagePaths } from '../../routes.ts';
import { api, data, type Answer } from '../api/client.ts';
import { ErrorNote, formatDate, formatNumber, Loading } from '../components/ui.tsx';
import { AdminGate, formatCredits, OlderEntries, ScrollTable, useOlderPages } from './shared.tsx';

type Page = Answer<'/admin/api/audit', 'get'>;
type Entry = Page['entries'][number];
type Action = Entry['action'];

const actionWords: Record<Action, string> = {
  'credits.adjust': 'Credits adjusted',
  'key.create': 'Key created',
  'key.revoke': 'Key revoked',
  'account.update': 'Plan or limits changed',
  'role.grant': 'Admin role granted',
  'role.revoke': 'Admin role taken back',
};
const actions = Object.keys(actionWords) as Action[];

export function AdminAuditPage() {
  return (
    <AdminGate title="Audit log">
      <AuditPage />
    </AdminGate>
  );
}

function AuditPage() {
  const location = useLocation();
  const user = location.query.user ?? '';
  const action = (actions as string[]).includes(location.query.action ?? '') ? (location.query.action as Action) : '';
  const [typed, setTyped] = useState(user);
  const [chosen, setChosen] = useState<Action | ''>(action);
  return (
    <>
      <p class="muted">
        Every operator action, newest first: credit adjustments, keys made by the master key (the gateway’s{' '}
        <code>POST /api/v1/apikeys</code>, with the account when new) or a shell, key revocations, plan and limits
        changes (from here or the gateway’s <code>PATCH /api/v1/account/{'{id}'}</code>), and the admin role granted or
        taken back from a shell. The database refuses to change or delete an entry.
      </p>
      <form
        class="inline-form"
        aria-label="Which entries"
        onSubmit={(event) => {
          event.preventDefault();
          const parameters = new URLSearchParams();
          if (typed.trim()) parameters.set('user', typed.trim());
          if (chosen) parameters.set('action', chosen);
          const search = parameters.toString();
          location.route(`${pagePaths.adminAudit}${search ? `?${search}` : ''}`);
        }}
      >
        <label for="audit-user">User id (empty: everyone)</label>
        <input
          id="audit-user"
          value={typed}
          maxLength={128}
          onInput={(event) => setTyped((event.target as HTMLInputElement).value)}
        />
        <label for="audit-action">Action</label>
        <select
          id="audit-action"
          value={chosen}
          onChange={(event) => setChosen((event.target as HTMLSelectElement).value as Action | '')}
        >
          <option value="">Every action</option>
          {actions.map((entry) => (
            <option key={entry} value={entry}>
              {actionWords[entry]}
            </option>
          ))}
        </select>
        <button type="submit" class="secondary">
          Show
        </button>
      </form>
      <AuditLog userId={user || undefined} action={action || undefined} showUser={!user} />
    </>
  );
}

/**
 * A page of the audit log (one user's, one action's, or everyone's), with the older entries on request; `version`
 * reloads it (after an action on the page).
 */
export function AuditLog(props: { userId?: string; action?: Action; showUser: boolean; version?: number }) {
  const pages = useOlderPages(
    (before) =>
      data(
        api.GET('/admin/api/audit', {
          params: {
            query: {
              limit: 25,
              ...(props.userId ? { user_id: props.userId } : {}),
              ...(props.action ? { action: props.action } : {}),
              ...(before ? { before } : {}),
            },
          },
        }),
      ),
    [props.userId, props.action, props.version],
  );
  const { first, entries } = pages;
  const columns = ['When and request', 'Operator', props.showUser ? 'Action, to whom' : 'Action', 'Reason', 'Details'];
  return (
    <section class="card" aria-labelledby="audit-title">
      <h2 id="audit-title">{props.showUser ? 'Entries' : 'Audit log'}</h2>
      <ErrorNote error={first.error} />
      {first.value ? (
        entries.length === 0 ? (
          <p class="muted">No operator has acted here yet.</p>
        ) : (
          <>
            <ScrollTable label="Audit log" caption="Operator actions, newest first" columns={columns}>
              {entries.map((entry) => (
                <tr key={entry.id} data-testid="audit-entry">
                  <td>
                    {formatDate(entry.at)}
                    <br />
                    <small class="muted">
                      <code>{entry.request_id ?? 'no request'}</code>
                    </small>
                  </td>
                  <td class="break">{operatorName(entry)}</td>
                  <td>
                    {actionWords[entry.action]}
                    {props.showUser && entry.user_id ? (
                      <>
                        <br />
                        <a class="break" href={`${pagePaths.adminUsers}/${encodeURIComponent(entry.user_id)}`}>
                          {entry.user_email ?? entry.user_id}
                        </a>
                      </>
                    ) : null}
                  </td>
                  <td class="wrap">{entry.reason ?? <span class="muted">none given</span>}</td>
                  <td class="wrap">{describe(entry)}</td>
                </tr>
              ))}
            </ScrollTable>
            <OlderEntries pages={pages} />
          </>
        )
      ) : first.error ? null : (
        <Loading what="the audit log" />
      )}
    </section>
  );
}

function operatorName(entry: Entry): string {
  if (entry.actor === 'master-key') return 'the master key';
  if (entry.actor === 'shell') return 'a shell (npm run admin)';
  return entry.actor_email ?? entry.actor;
}

/** An account's custom limits, as `custom_limits` of the account API has them. */
export interface Limits {
  per_hour?: number | null;
  per_day?: number | null;
  models?: string[] | 'all';
}

/** What the action did, in words, from its details. */
function describe(entry: Entry): string {
  const details = entry.details as Record<string, unknown>;
  switch (entry.action) {
    case 'credits.adjust':
      return `${formatCredits(Number(details.amount))} credits (ledger entry ${String(details.ledger_entry_id)})`;
    case 'key.create':
      return `${String(details.name ?? 'unnamed key')} (${String(details.preview)}); ${
        details.account_created ? 'new account' : 'existing account'
      } on plan ${String(details.plan)}`;
    case 'key.revoke':
      return `${String(details.name ?? 'unnamed key')} (${String(details.preview)})`;
    case 'role.grant':
    case 'role.revoke':
      return `role ${String(details.before)} → ${String(details.after)}`;
    case 'account.update': {
      const before = details.before as { plan: string; custom_limits: Limits | null };
      const after = details.after as { plan: string; custom_limits: Limits | null };
      const cycle = details.new_cycle as { credits_granted: number } | undefined;
      const parts = [
        before.plan === after.plan ? `plan ${after.plan}` : `plan ${before.plan} → ${after.plan}`,
        `limits ${describeLimits(before.custom_limits)} → ${describeLimits(after.custom_limits)}`,
      ];
      if (cycle) parts.push(`new cycle, ${formatNumber(cycle.credits_granted)} credits granted`);
      return parts.join('; ');
    }
  }
}

/** Custom limits in words: `the plan’s`, or each one set (`7 requests an hour, no daily limit, models gpt-4o-mini`). */
export function describeLimits(limits: Limits | null | undefined): string {
  if (!limits || Object.keys(limits).length === 0) return 'the plan’s';
  const window = (value: number | null | undefined, per: string, none: string) =>
    value === undefined ? null : value === null ? none : `${formatNumber(value)} requests ${per}`;
  return [
    window(limits.per_hour, 'an hour', 'no hourly limit'),
    window(limits.per_day, 'a day', 'no daily limit'),
    limits.models === undefined ? null : limits.models === 'all' ? 'every model' : `models ${limits.models.join(', ')}`,
  ]
    .filter(Boolean)
    .join(', ');
}
