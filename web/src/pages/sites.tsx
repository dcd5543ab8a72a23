/** Published sites: publish a page, update it, delete it, open it (on its own host, `<name>.<SITE_DOMAIN>`). */
import { useState } from 'preact/hooks';
import { api, data, type Answer } from '../api/client.ts';
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

type Site = Answer<'/deploy/sites', 'get'>['sites'][number];

const starter = `<!doctype html>
<html lang="en">
  <head><meta charset="utf-8"><title>Hello</title></head>
  <body><h1>Hello from Tessera</h1></body>
</html>
`;

export function SitesPage() {
  const sites = useLoad(async () => (await data(api.GET('/deploy/sites'))).sites, []);
  const [editing, setEditing] = useState<Site | 'new' | null>(null);
  const [notice, setNotice] = useState<{ text: string; url: string } | null>(null);
  const remove = useAction();
  return (
    <section class="page" aria-labelledby="page-title">
      <PageHeader title="Sites">
        <button type="button" onClick={() => setEditing('new')}>
          Publish a page
        </button>
      </PageHeader>
      <p class="muted">Single HTML pages served on their own host. Agents can publish too, with your approval.</p>
      {notice ? (
        <StatusNote>
          {notice.text}{' '}
          <a href={notice.url} target="_blank" rel="noopener noreferrer">
            Open {notice.url}
          </a>
        </StatusNote>
      ) : null}
      {editing ? (
        <SiteForm
          site={editing === 'new' ? null : editing}
          onCancel={() => setEditing(null)}
          onSaved={async (text, url) => {
            setEditing(null);
            setNotice({ text, url });
            await sites.reload();
          }}
        />
      ) : null}
      <ErrorNote error={sites.error} />
      <ErrorNote error={remove.error} prefix="Deleting failed" />
      {sites.value ? (
        sites.value.length === 0 ? (
          <p class="muted">No site yet.</p>
        ) : (
          <ul class="list" aria-label="Sites">
            {sites.value.map((site) => (
              <li key={site.subdomain}>
                <div class="item-head">
                  <h3>{site.title}</h3>
                  <a href={site.url} target="_blank" rel="noopener noreferrer">
                    {site.url}
                  </a>
                </div>
                <p class="muted">
                  {site.subdomain} · {formatBytes(site.bytes)} · updated {formatDate(site.updated_at)}
                </p>
                <div class="button-row">
                  <button type="button" class="secondary" onClick={() => setEditing(site)}>
                    Update
                  </button>
                  <button
                    type="button"
                    class="danger"
                    onClick={async () => {
                      if (
                        await remove.run(() =>
                          data(
                            api.DELETE('/deploy/site/{subdomain}', { params: { path: { subdomain: site.subdomain } } }),
                          ),
                        )
                      )
                        await sites.reload();
                    }}
                  >
                    Delete {site.subdomain}
                  </button>
                </div>
              </li>
            ))}
          </ul>
        )
      ) : sites.error ? null : (
        <Loading what="sites" />
      )}
    </section>
  );
}

function SiteForm(props: { site: Site | null; onCancel(): void; onSaved(text: string, url: string): Promise<void> }) {
  const { site } = props;
  const [subdomain, setSubdomain] = useState(site?.subdomain ?? '');
  const [title, setTitle] = useState(site?.title ?? '');
  const [html, setHtml] = useState(site ? '' : starter);
  const action = useAction();
  const submit = async (event: Event) => {
    event.preventDefault();
    await action.run(async () => {
      const answer = site
        ? await data(
            api.PUT('/deploy/site/{subdomain}', {
              params: { path: { subdomain: site.subdomain } },
              body: { title: title.trim(), ...(html ? { html } : {}) },
            }),
          )
        : await data(api.POST('/deploy/site', { body: { subdomain: subdomain.trim(), title: title.trim(), html } }));
      await props.onSaved(site ? `Updated ${site.subdomain}.` : `Published ${subdomain.trim()}.`, answer.url);
    });
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="site-form-title">
      <h2 id="site-form-title">{site ? `Update ${site.subdomain}` : 'Publish a page'}</h2>
      {site ? null : (
        <div class="field">
          <label for="site-subdomain">Name (one DNS label: letters, digits, hyphens)</label>
          <input
            id="site-subdomain"
            required
            maxLength={63}
            pattern="[A-Za-z0-9]([A-Za-z0-9\\-]{0,61}[A-Za-z0-9])?"
            value={subdomain}
            onInput={(e) => setSubdomain((e.target as HTMLInputElement).value)}
          />
        </div>
      )}
      <div class="field">
        <label for="site-title">Title</label>
        <input
          id="site-title"
          required
          maxLength={200}
          value={title}
          onInput={(e) => setTitle((e.target as HTMLInputElement).value)}
        />
      </div>
      <div class="field">
        <label for="site-html">HTML{site ? ' (leave empty to keep the page as it is)' : ''}</label>
        <textarea
          id="site-html"
          rows={10}
          required={!site}
          value={html}
          onInput={(e) => setHtml((e.target as HTMLTextAreaElement).value)}
        />
      </div>
      <div class="button-row">
        <button type="submit" disabled={action.busy}>
          {site ? 'Update' : 'Publish'}
        </button>
        <button type="button" class="secondary" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
      <ErrorNote error={action.error} />
    </form>
  );
}
