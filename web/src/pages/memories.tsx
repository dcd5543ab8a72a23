/** Memories: what the agents remember of the person; list, search, add, delete. */
import { useState } from 'preact/hooks';
import { api, data } from '../api/client.ts';
import { ErrorNote, formatDate, Loading, PageHeader, useAction, useLoad } from '../components/ui.tsx';

export function MemoriesPage() {
  const [query, setQuery] = useState('');
  const [searched, setSearched] = useState('');
  const memories = useLoad(async () => {
    const answer = searched
      ? await data(api.GET('/memory/search', { params: { query: { q: searched } } }))
      : await data(api.GET('/memory/list'));
    return answer.memories;
  }, [searched]);
  const [content, setContent] = useState('');
  const [importance, setImportance] = useState(0.5);
  const add = useAction();
  const remove = useAction();

  return (
    <section class="page" aria-labelledby="page-title">
      <PageHeader title="Memories" />
      <p class="muted">
        Agents load the memories that fit a message into their context, and save new ones as they learn.
      </p>
      <form
        class="card"
        onSubmit={async (event) => {
          event.preventDefault();
          if (await add.run(() => data(api.POST('/memory/add', { body: { content: content.trim(), importance } })))) {
            setContent('');
            await memories.reload();
          }
        }}
      >
        <div class="field">
          <label for="memory-content">Something to remember</label>
          <textarea
            id="memory-content"
            rows={2}
            required
            maxLength={4000}
            value={content}
            onInput={(e) => setContent((e.target as HTMLTextAreaElement).value)}
          />
        </div>
        <div class="inline-form">
          <label for="memory-importance">Importance</label>
          <input
            id="memory-importance"
            type="range"
            min={0}
            max={1}
            step={0.1}
            value={importance}
            onInput={(e) => setImportance(Number((e.target as HTMLInputElement).value))}
          />
          <output for="memory-importance">{importance.toFixed(1)}</output>
          <button type="submit" disabled={add.busy}>
            Add memory
          </button>
        </div>
        <ErrorNote error={add.error} />
      </form>
      <form
        role="search"
        class="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          setSearched(query.trim());
        }}
      >
        <label for="memory-search">Search memories</label>
        <input
          id="memory-search"
          type="search"
          value={query}
          onInput={(e) => setQuery((e.target as HTMLInputElement).value)}
        />
        <button type="submit" class="secondary">
          Search
        </button>
        {searched ? (
          <button
            type="button"
            class="link-button"
            onClick={() => {
              setQuery('');
              setSearched('');
            }}
          >
            Show all
          </button>
        ) : null}
      </form>
      <ErrorNote error={memories.error} />
      <ErrorNote error={remove.error} prefix="Deleting failed" />
      {memories.value ? (
        memories.value.length === 0 ? (
          <p class="muted">{searched ? 'No memory matches.' : 'No memories yet.'}</p>
        ) : (
          <ul class="list" aria-label="Memories">
            {memories.value.map((memory) => (
              <li key={memory.id}>
                <p>{memory.content}</p>
                <div class="item-head">
                  <small class="muted">
                    Importance {memory.importance.toFixed(1)} · {formatDate(memory.created_at)}
                  </small>
                  <button
                    type="button"
                    class="danger"
                    aria-label={`Delete memory: ${memory.content.slice(0, 40)}`}
                    onClick={async () => {
                      if (
                        await remove.run(() =>
                          data(api.DELETE('/memory/{id}', { params: { path: { id: memory.id } } })),
                        )
                      )
                        await memories.reload();
                    }}
                  >
                    Delete
                  </button>
                </div>
              </li>
            ))}
          </ul>
        )
      ) : memories.error ? null : (
        <Loading what="memories" />
      )}
    </section>
  );
}
