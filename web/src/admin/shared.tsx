/**
 * Pieces of the operator console's pages (docs/web-app.md, "Operator console"): the gate that tells a person who is
 * not an operator so, the console's own navigation, health badges, links to the Temporal Web UI, tables that scroll
 * sideways on a phone (a focusable, named region, so the keyboard reaches what is out of sight) and lists read newest
 * first a page at a time (the ledger, the audit log).
 */
import type { ComponentChildren, Ref } from 'preact';
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { pagePaths } from '../../routes.ts';
import { useAccount } from '../account.tsx';
import { ErrorNote, PageHeader, useAction, useLoad } from '../components/ui.tsx';

/**
 * The console's pages for an admin; for anyone else a page saying they are not an operator. The API refuses them
 * anyway (403): this only spares them a page of errors. The master key, the console's other operator, is for
 * programs (Bearer): a browser always arrives with a person's login.
 */
export function AdminGate({ title, children }: { title: string; children: ComponentChildren }) {
  const { me } = useAccount();
  if (!me.admin) {
    return (
      <section class="page" aria-labelledby="page-title">
        <PageHeader title="Not an operator" />
        <p>
          You are not an operator of this deployment: the operator console is for accounts with the admin role. An
          operator can grant it from a shell with{' '}
          <code>npm run admin -- grant-admin --email {me.user?.email ?? '…'}</code>.
        </p>
        <p>
          <a href={pagePaths.chat}>Back to the chat</a>
        </p>
      </section>
    );
  }
  return (
    <section class="page admin" aria-labelledby="page-title">
      <PageHeader title={title} />
      <AdminNavigation />
      {children}
    </section>
  );
}

const sections: Array<[string, string]> = [
  [pagePaths.admin, 'Overview'],
  [pagePaths.adminUsers, 'Users'],
  [pagePaths.adminActivity, 'Activity'],
  [pagePaths.adminAudit, 'Audit log'],
];

function AdminNavigation() {
  const { path } = useLocation();
  const current = (target: string) =>
    target === pagePaths.adminUsers ? path.startsWith(pagePaths.adminUsers) : path === target;
  return (
    <nav aria-label="Operator console" class="sub-navigation">
      <ul>
        {sections.map(([target, label]) => (
          <li key={target}>
            <a href={target} aria-current={current(target) ? 'page' : undefined}>
              {label}
            </a>
          </li>
        ))}
      </ul>
    </nav>
  );
}

export type Health = 'healthy' | 'degraded' | 'probing' | 'down' | 'disabled';

const healthWords: Record<Health, string> = {
  healthy: 'Healthy',
  degraded: 'Degraded',
  probing: 'Probing',
  down: 'Down',
  disabled: 'Disabled',
};

/** The health in words (never colour alone), coloured as a hint. */
export function HealthBadge({ health }: { health: Health }) {
  return <span class={`badge health health-${health}`}>{healthWords[health]}</span>;
}

/** A workflow in the Temporal Web UI, in a new tab; the link names the workflow for a screen reader. */
export function TemporalLink({ url, workflowId }: { url: string; workflowId: string }) {
  return (
    <a href={url} target="_blank" rel="noopener noreferrer">
      Temporal<span class="visually-hidden"> workflow {workflowId}</span>
    </a>
  );
}

/**
 * A table of the console: it scrolls sideways inside the page, in a focusable region named `label`, when the screen is
 * narrower than it; `caption` names it for screen readers; `columns` are its headings (numbers right-aligned), and the
 * children its body's rows.
 */
export function ScrollTable(props: {
  label: string;
  caption: string;
  columns: Array<string | { title: string; number: true }>;
  children: ComponentChildren;
}) {
  return (
    <div class="table-scroll" role="region" aria-label={props.label} tabIndex={0}>
      <table>
        <caption class="visually-hidden">{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((column) =>
              typeof column === 'string' ? (
                <th scope="col" key={column}>
                  {column}
                </th>
              ) : (
                <th scope="col" class="number" key={column.title}>
                  {column.title}
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}

/** A signed amount of credits: `+1,200` or `−34`. */
export function formatCredits(amount: number): string {
  const text = new Intl.NumberFormat().format(Math.abs(amount));
  return amount > 0 ? `+${text}` : amount < 0 ? `−${text}` : text;
}

/** Counts by status as a small table (`{done: 3, failed: 1}`), or a line saying there are none. */
export function StatusCounts({ counts, caption }: { counts: Record<string, number>; caption: string }) {
  const entries = Object.entries(counts).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  if (entries.length === 0) return <p class="muted">None in this period.</p>;
  return (
    <table class="counts">
      <caption class="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Status</th>
          <th scope="col" class="number">
            Count
          </th>
        </tr>
      </thead>
      <tbody>
        {entries.map(([status, count]) => (
          <tr key={status}>
            <td>{status.replace(/_/g, ' ')}</td>
            <td class="number">{new Intl.NumberFormat().format(count)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A page of a list read newest first: its entries, and the `before` of the older ones (null on the last page). */
export interface OlderPage<Entry> {
  entries: Entry[];
  next_before: string | null;
}

/**
 * A list read newest first a page at a time (the credit ledger, the audit log): the first page, loaded again when
 * `keys` change, and the older pages appended on request (`OlderEntries`).
 */
export function useOlderPages<Entry>(load: (before?: string) => Promise<OlderPage<Entry>>, keys: unknown[]) {
  const [older, setOlder] = useState<Entry[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const more = useAction();
  const first = useLoad(async () => {
    const page = await load();
    setOlder([]);
    setNext(page.next_before);
    return page;
  }, keys);
  return {
    first,
    entries: [...(first.value?.entries ?? []), ...older],
    more,
    next,
    loadOlder: () =>
      more.run(async () => {
        const page = await load(next ?? undefined);
        setOlder((previous) => [...previous, ...page.entries]);
        setNext(page.next_before);
      }),
  };
}

/** The button that appends the older entries of a `useOlderPages` list, while there are any, and its failure. */
export function OlderEntries({
  pages,
}: {
  pages: Pick<ReturnType<typeof useOlderPages>, 'more' | 'next' | 'loadOlder'>;
}) {
  return (
    <>
      <ErrorNote error={pages.more.error} />
      {pages.next ? (
        <button type="button" class="secondary" disabled={pages.more.busy} onClick={() => void pages.loadOlder()}>
          Older entries
        </button>
      ) : null}
    </>
  );
}

/**
 * The reason an action's audit entry keeps (and a credit adjustment's ledger note): required, at most 200 characters,
 * as the console's API takes it.
 */
export function ReasonField(props: {
  id: string;
  label: string;
  value: string;
  onInput(value: string): void;
  inputRef?: Ref<HTMLInputElement>;
}) {
  return (
    <div class="field grow">
      <label for={props.id}>{props.label}</label>
      <input
        id={props.id}
        ref={props.inputRef}
        required
        maxLength={200}
        value={props.value}
        onInput={(event) => props.onInput((event.target as HTMLInputElement).value)}
      />
    </div>
  );
}
