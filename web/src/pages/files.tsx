/**
 * Files: upload (PDF, xlsx, CSV, images), index for search with the indexing's progress (polled while it runs),
 * search by meaning across the indexed files, download, delete.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, data } from '../api/client.ts';
import { uploadFile, type IndexState } from '../api/uploads.ts';
import {
  ErrorNote,
  formatBytes,
  formatDate,
  Loading,
  PageHeader,
  StatusNote,
  useAction,
  useLoad,
} from '../components/ui.tsx';

/** Passages of the caller's indexed files nearest in meaning to `q`. */
async function searchFiles(q: string) {
  return (await data(api.GET('/rag/search', { params: { query: { q, k: 8 } } }))).results;
}
type Hit = Awaited<ReturnType<typeof searchFiles>>[number];

const running = (index: IndexState | null | undefined) =>
  index && (index.status === 'queued' || index.status === 'extracting' || index.status === 'embedding');

export function FilesPage() {
  const listing = useLoad(() => data(api.GET('/upload')), []);
  const [notice, setNotice] = useState<string | null>(null);
  const upload = useAction();
  const action = useAction();
  const input = useRef<HTMLInputElement>(null);

  // While an index runs, its progress is polled every second.
  const anyRunning = listing.value?.files.some((file) => running(file.index)) ?? false;
  useEffect(() => {
    if (!anyRunning) return;
    const timer = setInterval(() => void listing.reload(), 1000);
    return () => clearInterval(timer);
  }, [anyRunning]);

  return (
    <section class="page" aria-labelledby="page-title">
      <PageHeader title="Files" />
      <form
        class="card inline-form"
        onSubmit={async (event) => {
          event.preventDefault();
          const file = input.current?.files?.[0];
          if (!file) return;
          if (
            await upload.run(async () => {
              const uploaded = await uploadFile(file);
              await data(api.POST('/rag/index', { body: { file_id: uploaded.id } }));
              setNotice(`Uploaded ${uploaded.file_name}; indexing it for search.`);
            })
          ) {
            if (input.current) input.current.value = '';
            await listing.reload();
          }
        }}
      >
        <label for="file-input">File to upload (PDF, Excel, CSV, image)</label>
        <input
          id="file-input"
          ref={input}
          type="file"
          required
          accept=".pdf,.xlsx,.csv,image/png,image/jpeg,image/webp,image/gif"
        />
        <button type="submit" disabled={upload.busy}>
          {upload.busy ? 'Uploading…' : 'Upload and index'}
        </button>
        <ErrorNote error={upload.error} prefix="Upload failed" />
      </form>
      {notice ? <StatusNote>{notice}</StatusNote> : null}
      <Search />
      <h2>Your files</h2>
      {listing.value ? (
        <p class="muted">
          {formatBytes(listing.value.used_bytes)} of {formatBytes(listing.value.quota_bytes)} used
        </p>
      ) : null}
      <ErrorNote error={listing.error} />
      <ErrorNote error={action.error} />
      {listing.value ? (
        listing.value.files.length === 0 ? (
          <p class="muted">No file yet.</p>
        ) : (
          <ul class="list" aria-label="Files">
            {listing.value.files.map((file) => (
              <li key={file.id} data-testid="file">
                <div class="item-head">
                  <h3>{file.file_name}</h3>
                  <small class="muted">
                    {file.kind} · {formatBytes(file.bytes)} · {formatDate(file.created_at)}
                  </small>
                </div>
                <IndexStatus index={file.index ?? null} />
                <div class="button-row">
                  <a class="button secondary" href={file.download_url} download>
                    Download
                  </a>
                  {!running(file.index) ? (
                    <button
                      type="button"
                      class="secondary"
                      onClick={async () => {
                        if (await action.run(() => data(api.POST('/rag/index', { body: { file_id: file.id } }))))
                          await listing.reload();
                      }}
                    >
                      {file.index ? 'Index again' : 'Index for search'}
                    </button>
                  ) : null}
                  <button
                    type="button"
                    class="danger"
                    onClick={async () => {
                      if (
                        await action.run(() =>
                          data(api.DELETE('/upload/{file_id}', { params: { path: { file_id: file.id } } })),
                        )
                      )
                        await listing.reload();
                    }}
                  >
                    Delete {file.file_name}
                  </button>
                </div>
              </li>
            ))}
          </ul>
        )
      ) : listing.error ? null : (
        <Loading what="files" />
      )}
    </section>
  );
}

function IndexStatus({ index }: { index: IndexState | null }) {
  if (!index) return <p class="muted">Not indexed.</p>;
  const done = index.progress?.chunks_done ?? 0;
  const total = index.progress?.chunks_total ?? 0;
  if (running(index)) {
    return (
      <p class="index-status">
        <span>
          Indexing: {index.status}
          {total ? ` (${done} of ${total} passages)` : ''}
        </span>{' '}
        <progress class="progress" max={total || 1} value={total ? done : undefined} aria-label="Indexing progress" />
      </p>
    );
  }
  if (index.status === 'failed') return <p class="note error">Indexing failed: {index.error}</p>;
  return <p class="index-status">Indexed: {total} passages, searchable.</p>;
}

function Search() {
  const [query, setQuery] = useState('');
  const [hits, setHits] = useState<Hit[] | null>(null);
  const search = useAction();
  return (
    <section aria-labelledby="file-search-title">
      <h2 id="file-search-title">Search your files</h2>
      <form
        role="search"
        class="inline-form"
        onSubmit={async (event) => {
          event.preventDefault();
          await search.run(async () => {
            setHits(await searchFiles(query.trim()));
          });
        }}
      >
        <label for="file-search" class="visually-hidden">
          Search your files
        </label>
        <input
          id="file-search"
          type="search"
          required
          value={query}
          onInput={(e) => setQuery((e.target as HTMLInputElement).value)}
        />
        <button type="submit" class="secondary" disabled={search.busy}>
          Search
        </button>
      </form>
      <ErrorNote error={search.error} prefix="Search failed" />
      {hits ? (
        hits.length === 0 ? (
          <p role="status">Nothing found in your indexed files.</p>
        ) : (
          <ol class="list" aria-label="Search results">
            {hits.map((hit, index) => (
              <li key={index}>
                <p class="muted">
                  {hit.title} · {where(hit.location)} · score {hit.score.toFixed(2)}
                </p>
                <p>{hit.text}</p>
              </li>
            ))}
          </ol>
        )
      ) : null}
    </section>
  );
}

function where(location: Hit['location']): string {
  if (location.kind === 'page') return `page ${location.page}`;
  if (location.kind === 'rows' && location.rows)
    return `rows ${location.rows[0]}–${location.rows[1]}${location.sheet ? ` of ${location.sheet}` : ''}`;
  return location.kind;
}
