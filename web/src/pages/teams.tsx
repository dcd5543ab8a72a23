/** Teams: create one, see its members, invite by e-mail (owners), broadcast a message, and see its deliveries. */
import { useEffect, useState } from 'preact/hooks';
import { api, data } from '../api/client.ts';
import { ErrorNote, formatDate, Loading, PageHeader, StatusNote, useAction, useLoad } from '../components/ui.tsx';

export function TeamsPage() {
  const teams = useLoad(async () => (await data(api.GET('/teams'))).teams, []);
  const [name, setName] = useState('');
  const [open, setOpen] = useState<string | null>(null);
  const create = useAction();
  return (
    <section class="page" aria-labelledby="page-title">
      <PageHeader title="Teams" />
      <form
        class="card inline-form"
        onSubmit={async (event) => {
          event.preventDefault();
          if (await create.run(() => data(api.POST('/teams', { body: { name: name.trim() } })))) {
            setName('');
            await teams.reload();
          }
        }}
      >
        <label for="team-name">New team</label>
        <input
          id="team-name"
          required
          maxLength={100}
          value={name}
          onInput={(e) => setName((e.target as HTMLInputElement).value)}
        />
        <button type="submit" disabled={create.busy}>
          Create team
        </button>
        <ErrorNote error={create.error} />
      </form>
      <ErrorNote error={teams.error} />
      {teams.value ? (
        teams.value.length === 0 ? (
          <p class="muted">You are in no team yet.</p>
        ) : (
          <ul class="list" aria-label="Teams">
            {teams.value.map((team) => (
              <li key={team.id}>
                <div class="item-head">
                  <h3>{team.name}</h3>
                  <span class="badge">{team.role}</span>
                </div>
                <p class="muted">{team.member_count} members</p>
                <button
                  type="button"
                  class="secondary"
                  aria-expanded={open === team.id}
                  onClick={() => setOpen(open === team.id ? null : team.id)}
                >
                  {open === team.id ? 'Close' : 'Open'} {team.name}
                </button>
                {open === team.id ? <Team id={team.id} /> : null}
              </li>
            ))}
          </ul>
        )
      ) : teams.error ? null : (
        <Loading what="teams" />
      )}
    </section>
  );
}

function Team({ id }: { id: string }) {
  const team = useLoad(async () => data(api.GET('/teams/{team_id}', { params: { path: { team_id: id } } })), [id]);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<'member' | 'owner'>('member');
  const [message, setMessage] = useState('');
  const [invited, setInvited] = useState<string | null>(null);
  const [broadcastId, setBroadcastId] = useState<string | null>(null);
  const action = useAction();
  if (team.error) return <ErrorNote error={team.error} />;
  if (!team.value) return <Loading what="the team" />;
  return (
    <div class="panel">
      <h4>Members</h4>
      <ul>
        {team.value.members.map((member) => (
          <li key={member.user_id}>
            {member.email ?? member.user_id} · {member.role} · joined {formatDate(member.joined_at)}
          </li>
        ))}
      </ul>
      {team.value.role === 'owner' ? (
        <form
          class="inline-form"
          onSubmit={async (event) => {
            event.preventDefault();
            if (
              await action.run(() =>
                data(
                  api.POST('/teams/{team_id}/invite', {
                    params: { path: { team_id: id } },
                    body: { email: email.trim(), role },
                  }),
                ),
              )
            ) {
              setInvited(`Invitation sent to ${email.trim()}.`);
              setEmail('');
            }
          }}
        >
          <label for={`invite-${id}`}>Invite by e-mail</label>
          <input
            id={`invite-${id}`}
            type="email"
            required
            value={email}
            onInput={(e) => setEmail((e.target as HTMLInputElement).value)}
          />
          <label for={`role-${id}`}>Role</label>
          <select
            id={`role-${id}`}
            value={role}
            onChange={(e) => setRole((e.target as HTMLSelectElement).value as 'member' | 'owner')}
          >
            <option value="member">Member</option>
            <option value="owner">Owner</option>
          </select>
          <button type="submit" class="secondary" disabled={action.busy}>
            Invite
          </button>
        </form>
      ) : null}
      {invited ? <StatusNote>{invited}</StatusNote> : null}
      <form
        class="field"
        onSubmit={async (event) => {
          event.preventDefault();
          await action.run(async () => {
            const started = await data(
              api.POST('/teams/{team_id}/broadcast', {
                params: { path: { team_id: id } },
                body: { message: message.trim() },
              }),
            );
            setBroadcastId(started.id);
            setMessage('');
          });
        }}
      >
        <label for={`broadcast-${id}`}>Broadcast to every member</label>
        <textarea
          id={`broadcast-${id}`}
          rows={2}
          required
          value={message}
          onInput={(e) => setMessage((e.target as HTMLTextAreaElement).value)}
        />
        <button type="submit" disabled={action.busy}>
          Broadcast
        </button>
      </form>
      <ErrorNote error={action.error} />
      {broadcastId ? <Deliveries teamId={id} broadcastId={broadcastId} /> : null}
    </div>
  );
}

function Deliveries({ teamId, broadcastId }: { teamId: string; broadcastId: string }) {
  const broadcast = useLoad(
    () =>
      data(
        api.GET('/teams/{team_id}/broadcasts/{broadcast_id}', {
          params: { path: { team_id: teamId, broadcast_id: broadcastId } },
        }),
      ),
    [teamId, broadcastId],
  );
  const running = !broadcast.value || broadcast.value.status === 'running';
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(() => void broadcast.reload(), 1000);
    return () => clearInterval(timer);
  }, [running]);
  if (broadcast.error) return <ErrorNote error={broadcast.error} />;
  if (!broadcast.value) return <Loading what="deliveries" />;
  return (
    <section aria-label="Deliveries">
      <p role="status">Broadcast {broadcast.value.status}</p>
      <ul>
        {broadcast.value.deliveries.map((delivery) => (
          <li key={delivery.user_id}>
            {delivery.email ?? delivery.user_id}: {delivery.status}
          </li>
        ))}
      </ul>
    </section>
  );
}
