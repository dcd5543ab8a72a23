/** Logging in: a magic link by mail (`POST /auth/register`), or Google (`GET /auth/google`, a full-page visit). */
import { useEffect, useState } from 'preact/hooks';
import { api, data } from '../api/client.ts';
import { Form, FormActions, TextField } from '../components/form.tsx';
import { useAction } from '../components/ui.tsx';
import { GoogleButton } from '../components/google-button.tsx';

export function LoginPage({ aiName }: { aiName: string }) {
  const [email, setEmail] = useState('');
  const [sentTo, setSentTo] = useState<string | null>(null);
  const action = useAction();
  useEffect(() => {
    document.title = `Log in · ${aiName}`;
  }, [aiName]);

  const submit = async () => {
    const address = email.trim();
    if (await action.run(() => data(api.POST('/auth/register', { body: { email: address } })))) setSentTo(address);
  };

  return (
    <main id="main" class="login">
      <section class="card login-card" aria-labelledby="login-title">
        <h1 id="login-title">Log in to {aiName}</h1>
        {sentTo ? (
          <div role="status">
            <p>
              We sent a login link to <strong>{sentTo}</strong>. Open it on this device within 15 minutes.
            </p>
            <button type="button" class="secondary" onClick={() => setSentTo(null)}>
              Use another address
            </button>
          </div>
        ) : (
          <Form onSubmit={submit}>
            <TextField
              id="login-email"
              label="E-mail address"
              inline
              type="email"
              name="email"
              autocomplete="email"
              required
              value={email}
              onValue={setEmail}
            />
            <FormActions submit={action.busy ? 'Sending…' : 'Send me a login link'} action={action} inline />
          </Form>
        )}
        <p class="divider">or</p>
        <GoogleButton>Log in with Google</GoogleButton>
      </section>
    </main>
  );
}
