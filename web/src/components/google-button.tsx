/**
 * "Log in with Google" (and "Connect Google" in the settings): a full-page visit to `/auth/google`, which redirects to
 * Google. When the deployment has no Google login, that path answers 503 with the reason: asked first with a fetch
 * that does not follow the redirect, so the person reads the reason on this page instead of a bare error document.
 */
import type { ComponentChildren } from 'preact';
import { api, failure } from '../api/client.ts';
import { ErrorNote, useAction } from './ui.tsx';

export function GoogleButton({ children }: { children: ComponentChildren }) {
  const action = useAction();
  return (
    <>
      <a
        class="button secondary"
        href="/auth/google"
        onClick={async (event) => {
          event.preventDefault();
          await action.run(async () => {
            const { response, error } = await api.GET('/auth/google', { redirect: 'manual', parseAs: 'text' });
            // Configured: the redirect (opaque to fetch); the visit itself makes a fresh login state.
            if (response.type === 'opaqueredirect' || (response.status >= 300 && response.status < 400)) {
              location.assign('/auth/google');
              return;
            }
            let body: unknown = error;
            try {
              body = JSON.parse(String(error));
            } catch {
              // the text as it is
            }
            throw failure(response.status, body, response.statusText);
          });
        }}
      >
        {children}
      </a>
      <ErrorNote error={action.error} />
    </>
  );
}
