/**
 * Files: upload (PDF, xlsx, CSV, images), index for search with the indexing's progress (polled while it runs),
 * search by meaning across the indexed files, download, delete.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, data } from '../api/client.ts';
import { uploadFile, type IndexState } from '../api/uploads.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { Field, Form, FormActions, SearchForm } from '../components/form.tsx';
import { Page, Section } from '../components/layout.tsx';
import { ItemCard, ItemList } from '../components/list.tsx';
import { ErrorNote, formatBytes, formatDate, StatusNote, useAction, useLoad, WhenLoaded } from '../components/ui.tsx';

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

  const index = async (fileId: string) => {
    if (await action.run(() => data(api.POST('/rag/index', { body: { file_id: fileId } })))) await listing.reload();
  };

  return (
    <Page title="Files">
      <Form
        card
        inline
        onSubmit={async () => {
          const file = input.current?.files?.[0];
          if (!file) return;
          const uploaded = await upload.run(async () => {
            const { id, file_name } = await uploadFile(file);
            await data(api.POST('/rag/index', { body: { file_id: id } }));
            setNotice(`Uploaded ${file_name}; indexing it for search.`);
          });
          if (uploaded) {
            if (input.current) input.current.value = '';
            await listing.reload();
          }
        }}
      >
        <Field id="file-input" label="File to upload (PDF, Excel, CSV, image)" inline>
          {(wiring) => (
            <input
              {...wiring}
              ref={input}
              type="file"
              required
              accept=".pdf,.xlsx,.csv,image/png,image/jpeg,image/webp,image/gif"
            />
          )}
        </Field>
        <FormActions
          submit={upload.busy ? 'Uploading…' : 'Upload and index'}
          action={upload}
          errorPrefix="Upload failed"
          inline
        />
      </Form>
      <StatusNote>{notice}</StatusNote>
      <Search />
      <h2>Your files</h2>
      {listing.value ? (
        <p class="muted">
          {formatBytes(listing.value.used_bytes)} of {formatBytes(listing.value.quota_bytes)} used
        </p>
      ) : null}
      <ErrorNote error={action.error} />
      <WhenLoaded state={listing} what="files">
        {({ files }) => (
          <ItemList label="Files" items={files} empty="No file yet.">
            {(file) => (
              <ItemCard
                key={file.id}
                testId="file"
                title={file.file_name}
                aside={
                  <small class="muted">
                    {file.kind} · {formatBytes(file.bytes)} · {formatDate(file.created_at)}
                  </small>
                }
                actions={
                  <>
                    <a class="button secondary" href={file.download_url} download>
                      Download
                    </a>
                    {!running(file.index) ? (
                      <button type="button" class="secondary" onClick={() => index(file.id)}>
                        {file.index ? 'Index again' : 'Index for search'}
                      </button>
                    ) : null}
                    <ConfirmButton
                      label={`Delete ${file.file_name}`}
                      warning="It leaves your files and their search."
                      confirm={`Yes, delete ${file.file_name}`}
                      onConfirm={async () => {
                        const path = { file_id: file.id };
                        if (await action.run(() => data(api.DELETE('/upload/{file_id}', { params: { path } }))))
                          await listing.reload();
                      }}
                    />
                  </>
                }
              >
                <IndexStatus index={file.index ?? null} />
              </ItemCard>
            )}
          </ItemList>
        )}
      </WhenLoaded>
    </Page>
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
    <Section title="Search your files" plain>
      <SearchForm
        id="file-search"
        label="Search your files"
        hideLabel
        required
        value={query}
        onValue={setQuery}
        busy={search.busy}
        onSearch={(q) => search.run(async () => setHits(await searchFiles(q)))}
      />
      <ErrorNote error={search.error} prefix="Search failed" />
      {hits ? (
        hits.length === 0 ? (
          <p role="status">Nothing found in your indexed files.</p>
        ) : (
          <ItemList label="Search results" items={hits} ordered>
            {(hit, index) => (
              <ItemCard key={index}>
                <p class="muted">
                  {hit.title} · {where(hit.location)} · score {hit.score.toFixed(2)}
                </p>
                <p>{hit.text}</p>
              </ItemCard>
            )}
          </ItemList>
        )
      ) : null}
    </Section>
  );
}

function where(location: Hit['location']): string {
  if (location.kind === 'page') return `page ${location.page}`;
  if (location.kind === 'rows' && location.rows)
    return `rows ${location.rows[0]}–${location.rows[1]}${location.sheet ? ` of ${location.sheet}` : ''}`;
  return location.kind;
}
