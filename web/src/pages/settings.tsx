/**
 * Settings: the account, API keys (create, shown once, copy, revoke), linked LINE/Telegram/Slack chats (a link code
 * with deep links, or a code from a messaging app), the Google connection and its scopes, usage per day and per
 * agent (`GET /dashboard`), plans and checkout. Sharing and exporting a conversation are in the chat's header.
 */
import { useState } from 'preact/hooks';
import { api, data, type Answer } from '../api/client.ts';
import { useAccount } from '../account.tsx';
import {
  CopyButton,
  ErrorNote,
  formatDate,
  formatNumber,
  Loading,
  PageHeader,
  StatusNote,
  useAction,
  useLoad,
} from '../components/ui.tsx';
import { loadPlans } from './models.ts';
import { GoogleButton } from '../components/google-button.tsx';

export function SettingsPage() {
  const { me } = useAccount();
  return (
    <section class="page settings" aria-labelledby="page-title">
      <PageHeader title="Settings" />
      <section class="card" aria-labelledby="account-title">
        <h2 id="account-title">Account</h2>
        <p>
          {me.user?.email ?? 'No e-mail'} · {me.user?.plan} plan · {formatNumber(me.credits?.balance)} credits left (
          {formatNumber(me.credits?.held)} held for running turns, {formatNumber(me.credits?.used)} used)
        </p>
      </section>
      <ApiKeys />
      <LinkedChats linked={me.linked_apps ?? []} />
      <Google />
      <Usage />
      <Plans current={me.user?.plan} />
    </section>
  );
}

function ApiKeys() {
  const keys = useLoad(async () => (await data(api.GET('/api/keys'))).keys, []);
  const [name, setName] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const action = useAction();
  return (
    <section class="card" aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      <p class="muted">
        Keys work on the gateway's OpenAI-compatible API and on this service (<code>Authorization: Bearer</code>).
      </p>
      <form
        class="inline-form"
        onSubmit={async (event) => {
          event.preventDefault();
          await action.run(async () => {
            const created = await data(api.POST('/api/keys', { body: name.trim() ? { name: name.trim() } : {} }));
            setSecret(created.key);
            setName('');
            await keys.reload();
          });
        }}
      >
        <label for="key-name">Name</label>
        <input
          id="key-name"
          value={name}
          maxLength={100}
          onInput={(e) => setName((e.target as HTMLInputElement).value)}
        />
        <button type="submit" disabled={action.busy}>
          Create a key
        </button>
      </form>
      {secret ? (
        <div class="note status" role="status">
          <p>Your new key, shown only this once:</p>
          <p>
            <code data-testid="new-key">{secret}</code> <CopyButton text={secret} label="Copy key" />
          </p>
          <button type="button" class="link-button" onClick={() => setSecret(null)}>
            I have kept it
          </button>
        </div>
      ) : null}
      <ErrorNote error={action.error} />
      <ErrorNote error={keys.error} />
      {keys.value ? (
        keys.value.length === 0 ? (
          <p class="muted">No key yet.</p>
        ) : (
          <table>
            <caption class="visually-hidden">Your API keys</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.value.map((key) => (
                <tr key={key.id}>
                  <td>{key.name ?? '—'}</td>
                  <td>
                    <code>{key.key_preview}</code>
                  </td>
                  <td>{formatDate(key.created_at)}</td>
                  <td>{formatDate(key.last_used_at)}</td>
                  <td>
                    <button
                      type="button"
                      class="danger"
                      aria-label={`Revoke key ${key.name ?? key.key_preview}`}
                      onClick={() =>
                        action.run(async () => {
                          await data(api.DELETE('/api/keys/{id}', { params: { path: { id: key.id } } }));
                          await keys.reload();
                        })
                      }
                    >
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      ) : keys.error ? null : (
        <Loading what="keys" />
      )}
    </section>
  );
}

function LinkedChats({ linked }: { linked: string[] }) {
  const [code, setCode] = useState<Answer<'/link/code', 'get'> | null>(null);
  const [redeem, setRedeem] = useState('');
  const [linkedNow, setLinkedNow] = useState<string | null>(null);
  const action = useAction();
  const { reload } = useAccount();
  return (
    <section class="card" aria-labelledby="linked-title">
      <h2 id="linked-title">Linked chats</h2>
      <p>
        {linked.length
          ? `Your account is linked to ${linked.join(', ')}.`
          : 'No messaging app is linked yet: link LINE, Telegram or Slack to talk to the same assistant there.'}
      </p>
      <div class="button-row">
        <button
          type="button"
          class="secondary"
          disabled={action.busy}
          onClick={() => action.run(async () => setCode(await data(api.GET('/link/code'))))}
        >
          Get a link code
        </button>
      </div>
      {code ? (
        <div role="status">
          <p>
            Code <strong class="link-code">{code.code}</strong>, valid until {formatDate(code.expires_at)}.{' '}
            {code.instructions}
          </p>
          {Object.keys(code.links).length ? (
            <ul>
              {Object.entries(code.links).map(([platform, link]) => (
                <li key={platform}>
                  <a href={link} target="_blank" rel="noopener noreferrer">
                    Open {platform}
                  </a>
                </li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}
      <form
        class="inline-form"
        onSubmit={async (event) => {
          event.preventDefault();
          await action.run(async () => {
            const answer = await data(api.POST('/link/verify', { body: { code: redeem.trim() } }));
            setLinkedNow(`Linked ${answer.channel ?? 'the chat'}.`);
            setRedeem('');
            await reload();
          });
        }}
      >
        <label for="link-redeem">A code from a messaging app</label>
        <input
          id="link-redeem"
          inputMode="numeric"
          required
          value={redeem}
          onInput={(e) => setRedeem((e.target as HTMLInputElement).value)}
        />
        <button type="submit" class="secondary" disabled={action.busy}>
          Link
        </button>
      </form>
      {linkedNow ? <StatusNote>{linkedNow}</StatusNote> : null}
      <ErrorNote error={action.error} />
    </section>
  );
}

function Google() {
  const status = useLoad(() => data(api.GET('/auth/google/status')), []);
  const value = status.value;
  return (
    <section class="card" aria-labelledby="google-title">
      <h2 id="google-title">Google</h2>
      <ErrorNote error={status.error} />
      {value ? (
        <>
          <p>
            {value.connected
              ? `Connected as ${value.email ?? 'your Google account'}.`
              : 'Not connected: the workspace agents (mail, calendar, drive, sheets, docs, contacts, tasks) need it.'}
          </p>
          {value.agents ? (
            <p class="muted">
              Workspace agents enabled:{' '}
              {Object.entries(value.agents)
                .filter(([, enabled]) => enabled)
                .map(([agent]) => agent)
                .join(', ') || 'none'}
            </p>
          ) : null}
          {value.missing_scopes.length && value.connected ? (
            <details>
              <summary>{value.missing_scopes.length} permissions not granted</summary>
              <ul>
                {value.missing_scopes.map((scope) => (
                  <li key={scope}>
                    <code>{scope}</code>
                  </li>
                ))}
              </ul>
            </details>
          ) : null}
          <GoogleButton>{value.connected ? 'Connect again (grant more)' : 'Connect Google'}</GoogleButton>
        </>
      ) : status.error ? null : (
        <Loading what="the Google connection" />
      )}
    </section>
  );
}

function Usage() {
  const [days, setDays] = useState(30);
  const dashboard = useLoad(async () => data(api.GET('/dashboard', { params: { query: { days } } })), [days]);
  const value = dashboard.value;
  const peak = Math.max(1, ...(value?.credits_per_day.map((day) => day.credits) ?? [1]));
  return (
    <section class="card" aria-labelledby="usage-title">
      <div class="item-head">
        <h2 id="usage-title">Usage</h2>
        <label>
          <span class="visually-hidden">Period</span>
          <select value={days} onChange={(e) => setDays(Number((e.target as HTMLSelectElement).value))}>
            <option value={7}>Last 7 days</option>
            <option value={30}>Last 30 days</option>
            <option value={90}>Last 90 days</option>
          </select>
        </label>
      </div>
      <ErrorNote error={dashboard.error} />
      {value ? (
        <>
          <p>
            {formatNumber(value.totals.credits_used)} credits · {formatNumber(value.totals.turns)} turns (
            {formatNumber(value.totals.failed_turns)} failed) · {formatNumber(value.totals.messages)} messages ·{' '}
            {formatNumber(value.totals.tool_calls)} tool calls
          </p>
          <h3>Credits per day</h3>
          <div class="bar-chart" aria-hidden="true">
            {value.credits_per_day.map((day) => (
              <span key={day.day} title={`${day.day}: ${day.credits}`} class={barClass(day.credits / peak)} />
            ))}
          </div>
          <table>
            <caption class="visually-hidden">Credits per day</caption>
            <thead>
              <tr>
                <th scope="col">Day</th>
                <th scope="col">Credits</th>
              </tr>
            </thead>
            <tbody>
              {value.credits_per_day
                .filter((day) => day.credits > 0)
                .map((day) => (
                  <tr key={day.day}>
                    <td>{day.day}</td>
                    <td>{formatNumber(day.credits)}</td>
                  </tr>
                ))}
            </tbody>
          </table>
          <h3>Credits per agent</h3>
          <table>
            <caption class="visually-hidden">Credits per agent</caption>
            <thead>
              <tr>
                <th scope="col">Agent</th>
                <th scope="col">Credits</th>
              </tr>
            </thead>
            <tbody>
              {value.credits_per_agent.map((row) => (
                <tr key={row.agent_id ?? 'none'}>
                  <td>{row.agent_id ?? 'Routing, completions and media'}</td>
                  <td>{formatNumber(row.credits)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : dashboard.error ? null : (
        <Loading what="usage" />
      )}
    </section>
  );
}

/** A bar's height as one of ten classes (the CSP allows no inline style attributes). */
function barClass(share: number): string {
  return `bar-${Math.min(10, Math.max(0, Math.round(share * 10)))}`;
}

function Plans({ current }: { current: string | undefined }) {
  const plans = useLoad(loadPlans, []);
  const action = useAction();
  return (
    <section class="card" aria-labelledby="plans-title">
      <h2 id="plans-title">Plans</h2>
      <ErrorNote error={plans.error} />
      <ErrorNote error={action.error} prefix="Checkout could not start" />
      {plans.value ? (
        <ul class="grid list" aria-label="Plans">
          {plans.value.map((plan) => (
            <li key={plan.id}>
              <div class="item-head">
                <h3>{plan.id}</h3>
                {plan.id === current ? <span class="badge">your plan</span> : null}
              </div>
              <p>
                ${plan.price_usd_month} a month · {formatNumber(plan.monthly_credits)} credits a month
              </p>
              {plan.purchasable && plan.id !== current ? (
                <button
                  type="button"
                  disabled={action.busy}
                  onClick={() =>
                    action.run(async () => {
                      const checkout = await data(
                        api.POST('/billing/create-checkout', { body: { plan: plan.id as 'starter' | 'pro' } }),
                      );
                      location.assign(checkout.checkout_url);
                    })
                  }
                >
                  Upgrade to {plan.id}
                </button>
              ) : null}
            </li>
          ))}
        </ul>
      ) : plans.error ? null : (
        <Loading what="plans" />
      )}
    </section>
  );
}
