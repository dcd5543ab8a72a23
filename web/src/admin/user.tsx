/**
 * One user in the console (`/admin/users/{id}`): the account and its credits, a credit adjustment with its reason
 * (`POST /admin/api/users/{id}/credits`), the keys with a confirmed revoke (`DELETE …/keys/{key_id}`), the credit
 * ledger newest first (`GET …/ledger`, a kind at a time if wished, older pages on request) and the latest turns.
 *
 * The adjustment's Idempotency-Key is made when the form is filled in and kept until the adjustment is made: a
 * second click, or a retry after a lost answer, sends the same key, and the service answers the first adjustment
 * without moving credits again. The key lives in the page's memory only.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { pagePaths } from '../../routes.ts';
import { api, data, type Answer } from '../api/client.ts';
import { ErrorNote, formatDate, formatNumber, Loading, StatusNote, useAction, useLoad } from '../components/ui.tsx';
import { AdminGate, formatCredits, ScrollTable, TemporalLink } from './shared.tsx';

type Detail = Answer<'/admin/api/users/{user_id}', 'get'>;
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
  const user = detail.value?.user;
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
              <dd>{user.plan}</dd>
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
          <AdjustCredits
            userId={user.id}
            onAdjusted={async () => {
              setLedgerVersion((version) => version + 1);
              await detail.reload();
            }}
          />
          <Keys userId={user.id} keys={detail.value.api_keys} reload={detail.reload} />
          <Ledger userId={user.id} version={ledgerVersion} />
          <Turns userId={user.id} />
        </>
      ) : detail.error ? null : (
        <Loading what="the user" />
      )}
    </AdminGate>
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
        <div class="field grow">
          <label for="adjust-reason">Reason</label>
          <input
            id="adjust-reason"
            required
            maxLength={200}
            value={reason}
            onInput={(event) => setReason((event.target as HTMLInputElement).value)}
          />
        </div>
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
                    onConfirm={async () => {
                      const revoked = await action.run(() =>
                        data(
                          api.DELETE('/admin/api/users/{user_id}/keys/{key_id}', {
                            params: { path: { user_id: userId, key_id: key.id } },
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

/** The confirm step of a revoke: focus lands on it, Escape or Cancel goes back. */
function ConfirmRevoke(props: { name: string; busy: boolean; onConfirm(): void; onCancel(): void }) {
  const confirm = useRef<HTMLButtonElement>(null);
  useEffect(() => confirm.current?.focus(), []);
  return (
    <div
      class="confirm"
      role="group"
      aria-label={`Confirm revoking key ${props.name}`}
      onKeyDown={(event) => {
        if (event.key === 'Escape') props.onCancel();
      }}
    >
      <span>Programs using it stop working at once.</span>
      <button type="button" class="danger" ref={confirm} disabled={props.busy} onClick={props.onConfirm}>
        Yes, revoke {props.name}
      </button>
      <button type="button" class="secondary" onClick={props.onCancel}>
        Cancel
      </button>
    </div>
  );
}

function Ledger({ userId, version }: { userId: string; version: number }) {
  const [kind, setKind] = useState<(typeof kinds)[number] | ''>('');
  const [older, setOlder] = useState<LedgerPage['entries']>([]);
  const [next, setNext] = useState<string | null>(null);
  const more = useAction();
  const load = (before?: string) =>
    data(
      api.GET('/admin/api/users/{user_id}/ledger', {
        params: {
          path: { user_id: userId },
          query: { limit: 25, ...(kind ? { kind } : {}), ...(before ? { before } : {}) },
        },
      }),
    );
  const first = useLoad(async () => {
    const page = await load();
    setOlder([]);
    setNext(page.next_before);
    return page;
  }, [userId, kind, version]);
  const entries = [...(first.value?.entries ?? []), ...older];
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
            <ErrorNote error={more.error} />
            {next ? (
              <button
                type="button"
                class="secondary"
                disabled={more.busy}
                onClick={() =>
                  more.run(async () => {
                    const page = await load(next);
                    setOlder((previous) => [...previous, ...page.entries]);
                    setNext(page.next_before);
                  })
                }
              >
                Older entries
              </button>
            ) : null}
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
