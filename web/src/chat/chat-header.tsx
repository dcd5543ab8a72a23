/**
 * A chat's header: its title, and its actions (rename, share and export, usage, delete): a row on a wide screen,
 * behind a Chat actions button on a narrow one (styles.css shows one or the other), each opening its panel below.
 */
import { useRef, useState } from 'preact/hooks';
import { api, data } from '../api/client.ts';
import { CopyButton, ErrorNote, formatNumber, formatUsd, Loading, useAction, useLoad } from '../components/ui.tsx';

export interface HeaderProps {
  sessionId: string;
  saved: boolean;
  title: string | null;
  sidebarOpen: boolean;
  onToggleSidebar(): void;
  onDeleted(): void;
  onRenamed(): void;
}

export function ConversationHeader(props: HeaderProps) {
  const [panel, setPanel] = useState<'none' | 'rename' | 'share' | 'usage' | 'delete'>('none');
  const [menuOpen, setMenuOpen] = useState(false);
  const menuButton = useRef<HTMLButtonElement>(null);
  const toggle = (name: typeof panel) => {
    setPanel(panel === name ? 'none' : name);
    // The list closes behind the choice; the focus goes back to its button rather than to the page's start.
    if (menuOpen) {
      setMenuOpen(false);
      menuButton.current?.focus();
    }
  };
  return (
    <header class="conversation-header">
      <button
        type="button"
        class="secondary sidebar-toggle"
        aria-expanded={props.sidebarOpen}
        onClick={props.onToggleSidebar}
      >
        Chats
      </button>
      <h1 id="conversation-title">{props.saved ? (props.title ?? 'Chat') : 'New chat'}</h1>
      {props.saved ? (
        <div
          class={`conversation-menu${menuOpen ? ' open' : ''}`}
          onKeyDown={(event) => {
            if (event.key === 'Escape' && menuOpen) {
              setMenuOpen(false);
              menuButton.current?.focus();
            }
          }}
          onFocusOut={(event) => {
            // Leaving the list (Tab past its end, a click elsewhere) closes it.
            if (!event.currentTarget.contains(event.relatedTarget as Node | null)) setMenuOpen(false);
          }}
        >
          <button
            type="button"
            ref={menuButton}
            class="secondary menu-toggle"
            aria-expanded={menuOpen}
            aria-controls="conversation-actions"
            onClick={() => setMenuOpen(!menuOpen)}
          >
            Chat actions
          </button>
          <div id="conversation-actions" class="conversation-actions">
            <button type="button" class="secondary" aria-expanded={panel === 'rename'} onClick={() => toggle('rename')}>
              Rename
            </button>
            <button type="button" class="secondary" aria-expanded={panel === 'share'} onClick={() => toggle('share')}>
              Share / export
            </button>
            <button type="button" class="secondary" aria-expanded={panel === 'usage'} onClick={() => toggle('usage')}>
              Usage
            </button>
            <button type="button" class="danger" aria-expanded={panel === 'delete'} onClick={() => toggle('delete')}>
              Delete
            </button>
          </div>
        </div>
      ) : null}
      {panel === 'rename' ? (
        <RenamePanel
          sessionId={props.sessionId}
          title={props.title}
          onDone={() => {
            setPanel('none');
            props.onRenamed();
          }}
        />
      ) : null}
      {panel === 'share' ? <SharePanel sessionId={props.sessionId} /> : null}
      {panel === 'usage' ? <UsagePanel sessionId={props.sessionId} /> : null}
      {panel === 'delete' ? (
        <DeletePanel sessionId={props.sessionId} onCancel={() => setPanel('none')} onDeleted={props.onDeleted} />
      ) : null}
    </header>
  );
}

function SharePanel({ sessionId }: { sessionId: string }) {
  const [link, setLink] = useState<string | null>(null);
  const [revoked, setRevoked] = useState<number | null>(null);
  const action = useAction();
  const encoded = encodeURIComponent(sessionId);
  return (
    <div class="panel">
      <p>A share link shows this conversation as it is now, read-only, to anyone who has the link.</p>
      <div class="button-row">
        <button
          type="button"
          disabled={action.busy}
          onClick={() =>
            action.run(async () => {
              const share = await data(
                api.POST('/share/{session_id}', { params: { path: { session_id: sessionId } }, body: {} }),
              );
              setLink(share.url);
              setRevoked(null);
            })
          }
        >
          Create a share link
        </button>
        <button
          type="button"
          class="secondary"
          disabled={action.busy}
          onClick={() =>
            action.run(async () => {
              const answer = await data(
                api.DELETE('/share/{session_id}', { params: { path: { session_id: sessionId } } }),
              );
              setRevoked(answer.revoked);
              setLink(null);
            })
          }
        >
          Revoke all links
        </button>
        <a class="button secondary" href={`/export/${encoded}?format=md`} download>
          Export Markdown
        </a>
        <a class="button secondary" href={`/export/${encoded}?format=json`} download>
          Export JSON
        </a>
      </div>
      {link ? (
        <p role="status" class="share-link">
          <a href={link} target="_blank" rel="noopener noreferrer">
            {link}
          </a>{' '}
          <CopyButton text={link} label="Copy link" />
        </p>
      ) : null}
      {revoked !== null ? <p role="status">Revoked {revoked} link(s).</p> : null}
      <ErrorNote error={action.error} />
    </div>
  );
}

function UsagePanel({ sessionId }: { sessionId: string }) {
  const usage = useLoad(
    async () => data(api.GET('/usage/{session_id}', { params: { path: { session_id: sessionId } } })),
    [sessionId],
  );
  if (usage.error) return <ErrorNote error={usage.error} />;
  if (!usage.value) return <Loading what="usage" />;
  const value = usage.value;
  return (
    <div class="panel">
      <p>
        {value.turns} turns · {formatNumber(value.credits)} credits · {formatUsd(value.cost_usd)} ·{' '}
        {formatNumber(value.input_tokens)} tokens in, {formatNumber(value.output_tokens)} out
      </p>
      {value.by_model.length ? (
        <table>
          <caption class="visually-hidden">Usage by model</caption>
          <thead>
            <tr>
              <th scope="col">Model</th>
              <th scope="col">Calls</th>
              <th scope="col">Credits</th>
              <th scope="col">Cost</th>
            </tr>
          </thead>
          <tbody>
            {value.by_model.map((row) => (
              <tr key={row.model}>
                <td>{row.model}</td>
                <td>{row.turns}</td>
                <td>{formatNumber(row.credits)}</td>
                <td>{formatUsd(row.cost_usd)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}

function RenamePanel({ sessionId, title, onDone }: { sessionId: string; title: string | null; onDone(): void }) {
  const [value, setValue] = useState(title ?? '');
  const action = useAction();
  return (
    <form
      class="panel inline-form"
      onSubmit={async (event) => {
        event.preventDefault();
        const renamed = await action.run(() =>
          data(
            api.PATCH('/sessions/{session_id}', {
              params: { path: { session_id: sessionId } },
              body: { title: value.trim() || null },
            }),
          ),
        );
        if (renamed) onDone();
      }}
    >
      <label for="rename-title">Title (empty: the first message)</label>
      <input
        id="rename-title"
        value={value}
        maxLength={200}
        onInput={(event) => setValue((event.target as HTMLInputElement).value)}
      />
      <button type="submit" disabled={action.busy}>
        Save title
      </button>
      <ErrorNote error={action.error} />
    </form>
  );
}

function DeletePanel(props: { sessionId: string; onCancel(): void; onDeleted(): void }) {
  const action = useAction();
  return (
    <div class="panel" role="group" aria-label="Delete this chat">
      <p>Delete this chat and its messages for good?</p>
      <div class="button-row">
        <button
          type="button"
          class="danger"
          disabled={action.busy}
          onClick={async () => {
            if (
              await action.run(() =>
                data(api.DELETE('/sessions/{session_id}', { params: { path: { session_id: props.sessionId } } })),
              )
            ) {
              props.onDeleted();
            }
          }}
        >
          Delete for good
        </button>
        <button type="button" class="secondary" onClick={props.onCancel}>
          Keep it
        </button>
      </div>
      <ErrorNote error={action.error} />
    </div>
  );
}
