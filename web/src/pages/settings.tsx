/**
 * Settings: the account, API keys (create, shown once, copy, revoke), linked LINE/Telegram/Slack chats (a link code
 * with deep links, or a code from a messaging app), the Google connection and its scopes, usage per day and per
 * agent (`GET /dashboard`), plans and checkout. Sharing and exporting a conversation are in the chat's header.
 */
import { useState } from 'preact/hooks';
import { api, data, type Answer } from '../api/client.ts';
import { useAccount } from '../account.tsx';
import { ConfirmButton } from '../components/confirm.tsx';
import { Form, FormActions, SelectField, TextField } from '../components/form.tsx';
import { Page, Section } from '../components/layout.tsx';
import { Badge, ItemCard, ItemList } from '../components/list.tsx';
import { DataTable } from '../components/table.tsx';
import {
  CopyButton,
  ErrorNote,
  formatDate,
  formatNumber,
  StatusNote,
  useAction,
  useLoad,
  WhenLoaded,
} from '../components/ui.tsx';
import { loadPlans } from './models.ts';
import { GoogleButton } from '../components/google-button.tsx';

type Key = Answer<'/api/keys', 'get'>['keys'][number];

export function SettingsPage() {
  const { me } = useAccount();
  return (
    <Page title="Settings" class="settings">
      <Section title="Account">
        <p>
          {me.user?.email ?? 'No e-mail'} · {me.user?.plan} plan · {formatNumber(me.credits?.balance)} credits left (
          {formatNumber(me.credits?.held)} held for running turns, {formatNumber(me.credits?.used)} used)
        </p>
      </Section>
      <ApiKeys />
      <LinkedChats linked={me.linked_apps ?? []} />
      <Google />
      <Usage />
      <Plans current={me.user?.plan} />
    </Page>
  );
}

function ApiKeys() {
  const keys = useLoad(async () => (await data(api.GET('/api/keys'))).keys, []);
  const [name, setName] = useState('');
  const [secret, setSecret] = useState<string | null>(null);
  const create = useAction();
  const revoke = useAction();
  const keyName = (key: Key) => key.name ?? key.key_preview;
  return (
    <Section title="API keys">
      <p class="muted">
        Keys work on the gateway's OpenAI-compatible API and on this service (<code>Authorization: Bearer</code>).
      </p>
      <Form
        inline
        onSubmit={() =>
          create.run(async () => {
            const created = await data(api.POST('/api/keys', { body: name.trim() ? { name: name.trim() } : {} }));
            setSecret(created.key);
            setName('');
            await keys.reload();
          })
        }
      >
        <TextField id="key-name" label="Name" inline maxLength={100} value={name} onValue={setName} />
        <FormActions submit="Create a key" action={create} inline />
      </Form>
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
      <ErrorNote error={revoke.error} prefix="Revoking failed" />
      <WhenLoaded state={keys} what="keys">
        {(list) => (
          <DataTable
            caption="Your API keys"
            rows={list}
            rowKey={(key) => key.id}
            empty="No key yet."
            columns={[
              { title: 'Name', rowHeader: true, cell: (key) => key.name ?? '—' },
              { title: 'Key', cell: (key) => <code>{key.key_preview}</code> },
              { title: 'Created', cell: (key) => formatDate(key.created_at) },
              { title: 'Last used', cell: (key) => formatDate(key.last_used_at) },
              {
                title: 'Actions',
                hideTitle: true,
                cell: (key) => (
                  <ConfirmButton
                    label={`Revoke key ${keyName(key)}`}
                    warning="Programs using it stop working at once."
                    confirm={`Yes, revoke ${keyName(key)}`}
                    onConfirm={() =>
                      revoke.run(async () => {
                        await data(api.DELETE('/api/keys/{id}', { params: { path: { id: key.id } } }));
                        await keys.reload();
                      })
                    }
                  >
                    Revoke
                  </ConfirmButton>
                ),
              },
            ]}
          />
        )}
      </WhenLoaded>
    </Section>
  );
}

function LinkedChats({ linked }: { linked: string[] }) {
  const [code, setCode] = useState<Answer<'/link/code', 'get'> | null>(null);
  const [redeem, setRedeem] = useState('');
  const [linkedNow, setLinkedNow] = useState<string | null>(null);
  const action = useAction();
  const { reload } = useAccount();
  return (
    <Section title="Linked chats">
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
      <Form
        inline
        onSubmit={() =>
          action.run(async () => {
            const answer = await data(api.POST('/link/verify', { body: { code: redeem.trim() } }));
            setLinkedNow(`Linked ${answer.channel ?? 'the chat'}.`);
            setRedeem('');
            await reload();
          })
        }
      >
        <TextField
          id="link-redeem"
          label="A code from a messaging app"
          inline
          inputMode="numeric"
          required
          value={redeem}
          onValue={setRedeem}
        />
        <button type="submit" class="secondary" disabled={action.busy}>
          Link
        </button>
      </Form>
      <StatusNote>{linkedNow}</StatusNote>
      <ErrorNote error={action.error} />
    </Section>
  );
}

function Google() {
  const status = useLoad(() => data(api.GET('/auth/google/status')), []);
  return (
    <Section title="Google">
      <WhenLoaded state={status} what="the Google connection">
        {(value) => (
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
        )}
      </WhenLoaded>
    </Section>
  );
}

const periods = [7, 30, 90].map((days) => ({ value: String(days), label: `Last ${days} days` }));

function Usage() {
  const [days, setDays] = useState(30);
  const dashboard = useLoad(async () => data(api.GET('/dashboard', { params: { query: { days } } })), [days]);
  return (
    <Section
      title="Usage"
      aside={
        <SelectField
          label="Period"
          hideLabel
          inline
          value={String(days)}
          options={periods}
          onValue={(value) => setDays(Number(value))}
        />
      }
    >
      <WhenLoaded state={dashboard} what="usage">
        {(value) => {
          const peak = Math.max(1, ...value.credits_per_day.map((day) => day.credits));
          return (
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
              <DataTable
                caption="Credits per day"
                rows={value.credits_per_day.filter((day) => day.credits > 0)}
                rowKey={(day) => day.day}
                empty="No credits used in this period."
                columns={[
                  { title: 'Day', rowHeader: true, cell: (day) => day.day },
                  { title: 'Credits', number: true, cell: (day) => formatNumber(day.credits) },
                ]}
              />
              <h3>Credits per agent</h3>
              <DataTable
                caption="Credits per agent"
                rows={value.credits_per_agent}
                rowKey={(row) => row.agent_id ?? 'none'}
                empty="No credits used in this period."
                columns={[
                  { title: 'Agent', rowHeader: true, cell: (row) => row.agent_id ?? 'Routing, completions and media' },
                  { title: 'Credits', number: true, cell: (row) => formatNumber(row.credits) },
                ]}
              />
            </>
          );
        }}
      </WhenLoaded>
    </Section>
  );
}

/** A bar's height as one of ten classes (the CSP allows no inline style attributes). */
function barClass(share: number): string {
  return `bar-${Math.min(10, Math.max(0, Math.round(share * 10)))}`;
}

function Plans({ current }: { current: string | undefined }) {
  const plans = useLoad(loadPlans, []);
  const action = useAction();
  const checkout = (plan: 'starter' | 'pro') =>
    action.run(async () => {
      const started = await data(api.POST('/billing/create-checkout', { body: { plan } }));
      location.assign(started.checkout_url);
    });
  return (
    <Section title="Plans">
      <ErrorNote error={action.error} prefix="Checkout could not start" />
      <WhenLoaded state={plans} what="plans">
        {(list) => (
          <ItemList label="Plans" items={list} grid>
            {(plan) => (
              <ItemCard
                key={plan.id}
                title={plan.id}
                aside={plan.id === current ? <Badge>your plan</Badge> : null}
                footer={
                  plan.purchasable && plan.id !== current ? (
                    <button type="button" disabled={action.busy} onClick={() => checkout(plan.id as 'starter' | 'pro')}>
                      Upgrade to {plan.id}
                    </button>
                  ) : null
                }
              >
                <p>
                  ${plan.price_usd_month} a month · {formatNumber(plan.monthly_credits)} credits a month
                </p>
              </ItemCard>
            )}
          </ItemList>
        )}
      </WhenLoaded>
    </Section>
  );
}
