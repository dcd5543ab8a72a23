/** The chat list: new chat, the owner's chats (most recent first), and a search across all of them. */
import { useState } from 'preact/hooks';
import { api, data, type Answer } from '../api/client.ts';
import { ErrorNote, formatDate, Loading, useAction } from '../components/ui.tsx';

export type SessionSummary = Answer<'/sessions', 'get'>['sessions'][number];

export function SessionSidebar(props: {
  sessions: SessionSummary[] | undefined;
  error: unknown;
  current: string | null;
  onNew(): void;
  onChanged(): void;
  onClose(): void;
}) {
  const [query, setQuery] = useState('');
  const [results, setResults] = useState<Answer<'/search/messages', 'get'>['results'] | null>(null);
  const search = useAction();
  const runSearch = async (event: Event) => {
    event.preventDefault();
    const q = query.trim();
    if (!q) {
      setResults(null);
      return;
    }
    await search.run(async () => {
      const found = await data(api.GET('/search/messages', { params: { query: { q, limit: 20 } } }));
      setResults(found.results);
    });
  };

  return (
    <aside class="sessions" aria-label="Chats">
      <div class="sessions-top">
        <button type="button" onClick={props.onNew}>
          New chat
        </button>
        <button type="button" class="secondary close-sidebar" onClick={props.onClose}>
          Close
        </button>
      </div>
      <form role="search" onSubmit={runSearch} class="session-search">
        <label for="session-search" class="visually-hidden">
          Search all chats
        </label>
        <input
          id="session-search"
          type="search"
          placeholder="Search all chats"
          value={query}
          onInput={(event) => setQuery((event.target as HTMLInputElement).value)}
        />
        <button type="submit" class="secondary" disabled={search.busy}>
          Search
        </button>
      </form>
      <ErrorNote error={search.error} prefix="Search failed" />
      {results ? (
        <section aria-label="Search results" class="search-results">
          <p role="status">
            {results.length === 0 ? 'No message matches.' : `${results.length} matching messages`}{' '}
            <button type="button" class="link-button" onClick={() => setResults(null)}>
              Clear
            </button>
          </p>
          <ul>
            {results.map((hit, index) => (
              <li key={index}>
                <a href={`/chats/${encodeURIComponent(hit.session_id)}`}>
                  <Snippet text={hit.snippet} />
                  <small>{formatDate(hit.created_at)}</small>
                </a>
              </li>
            ))}
          </ul>
        </section>
      ) : null}
      <ErrorNote error={props.error} prefix="Chats could not be loaded" />
      {props.sessions ? (
        props.sessions.length === 0 ? (
          <p class="muted">No chats yet.</p>
        ) : (
          <ul class="session-list">
            {props.sessions.map((session) => (
              <li key={session.session_id}>
                <a
                  href={`/chats/${encodeURIComponent(session.session_id)}`}
                  aria-current={session.session_id === props.current ? 'page' : undefined}
                >
                  <span class="session-title">{session.title ?? 'New chat'}</span>
                  <small>
                    {formatDate(session.last_activity)} · {session.message_count} messages
                  </small>
                </a>
              </li>
            ))}
          </ul>
        )
      ) : props.error ? null : (
        <Loading what="chats" />
      )}
    </aside>
  );
}

/** A search snippet: the service marks matches with « and » in plain text; they become <mark>, nothing is HTML. */
function Snippet({ text }: { text: string }) {
  const pieces = text.split(/(«[^»]*»)/);
  return (
    <span class="snippet">
      {pieces.map((piece, index) =>
        piece.startsWith('«') && piece.endsWith('»') ? <mark key={index}>{piece.slice(1, -1)}</mark> : piece,
      )}
    </span>
  );
}
