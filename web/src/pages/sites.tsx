/** Published sites: publish a page, update it, delete it, open it (on its own host, `<name>.<SITE_DOMAIN>`). */
import { useState } from 'preact/hooks';
import { api, data, type Answer } from '../api/client.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { Form, FormActions, TextArea, TextField } from '../components/form.tsx';
import { Page } from '../components/layout.tsx';
import { ItemCard, ItemList } from '../components/list.tsx';
import { ErrorNote, formatBytes, formatDate, StatusNote, useAction, useLoad, WhenLoaded } from '../components/ui.tsx';

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
    <Page
      title="Sites"
      actions={
        <button type="button" onClick={() => setEditing('new')}>
          Publish a page
        </button>
      }
      intro="Single HTML pages served on their own host. Agents can publish too, with your approval."
    >
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
      <ErrorNote error={remove.error} prefix="Deleting failed" />
      <WhenLoaded state={sites} what="sites">
        {(list) => (
          <ItemList label="Sites" items={list} empty="No site yet.">
            {(site) => (
              <ItemCard
                key={site.subdomain}
                title={site.title}
                aside={
                  <a href={site.url} target="_blank" rel="noopener noreferrer">
                    {site.url}
                  </a>
                }
                actions={
                  <>
                    <button type="button" class="secondary" onClick={() => setEditing(site)}>
                      Update
                    </button>
                    <ConfirmButton
                      label={`Delete ${site.subdomain}`}
                      warning="The page goes offline at once."
                      confirm={`Yes, delete ${site.subdomain}`}
                      onConfirm={async () => {
                        const path = { subdomain: site.subdomain };
                        if (await remove.run(() => data(api.DELETE('/deploy/site/{subdomain}', { params: { path } }))))
                          await sites.reload();
                      }}
                    />
                  </>
                }
              >
                <p class="muted">
                  {site.subdomain} · {formatBytes(site.bytes)} · updated {formatDate(site.updated_at)}
                </p>
              </ItemCard>
            )}
          </ItemList>
        )}
      </WhenLoaded>
    </Page>
  );
}

function SiteForm(props: { site: Site | null; onCancel(): void; onSaved(text: string, url: string): Promise<void> }) {
  const { site } = props;
  const [subdomain, setSubdomain] = useState(site?.subdomain ?? '');
  const [title, setTitle] = useState(site?.title ?? '');
  const [html, setHtml] = useState(site ? '' : starter);
  const action = useAction();
  const submit = () =>
    action.run(async () => {
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
  return (
    <Form title={site ? `Update ${site.subdomain}` : 'Publish a page'} onSubmit={submit}>
      {site ? null : (
        <TextField
          id="site-subdomain"
          label="Name (one DNS label: letters, digits, hyphens)"
          required
          maxLength={63}
          pattern="[A-Za-z0-9]([A-Za-z0-9\\-]{0,61}[A-Za-z0-9])?"
          value={subdomain}
          onValue={setSubdomain}
        />
      )}
      <TextField id="site-title" label="Title" required maxLength={200} value={title} onValue={setTitle} />
      <TextArea
        id="site-html"
        label={`HTML${site ? ' (leave empty to keep the page as it is)' : ''}`}
        rows={10}
        required={!site}
        value={html}
        onValue={setHtml}
      />
      <FormActions submit={site ? 'Update' : 'Publish'} action={action} onCancel={props.onCancel} />
    </Form>
  );
}
