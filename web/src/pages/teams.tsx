/** Teams: create one, see its members, invite by e-mail (owners), broadcast a message, and see its deliveries. */
import { useEffect, useState } from 'preact/hooks';
import { api, data } from '../api/client.ts';
import { Form, FormActions, SelectField, TextArea, TextField } from '../components/form.tsx';
import { Page } from '../components/layout.tsx';
import { Badge, ItemCard, ItemList } from '../components/list.tsx';
import { formatDate, StatusNote, useAction, useLoad, WhenLoaded } from '../components/ui.tsx';

const roles = [
  { value: 'member', label: 'Member' },
  { value: 'owner', label: 'Owner' },
] as const;

export function TeamsPage() {
  const teams = useLoad(async () => (await data(api.GET('/teams'))).teams, []);
  const [name, setName] = useState('');
  const [open, setOpen] = useState<string | null>(null);
  const create = useAction();
  return (
    <Page title="Teams">
      <Form
        card
        inline
        onSubmit={async () => {
          if (await create.run(() => data(api.POST('/teams', { body: { name: name.trim() } })))) {
            setName('');
            await teams.reload();
          }
        }}
      >
        <TextField id="team-name" label="New team" inline required maxLength={100} value={name} onValue={setName} />
        <FormActions submit="Create team" action={create} inline />
      </Form>
      <WhenLoaded state={teams} what="teams">
        {(list) => (
          <ItemList label="Teams" items={list} empty="You are in no team yet.">
            {(team) => (
              <ItemCard
                key={team.id}
                title={team.name}
                aside={<Badge>{team.role}</Badge>}
                actions={
                  <button
                    type="button"
                    class="secondary"
                    aria-expanded={open === team.id}
                    onClick={() => setOpen(open === team.id ? null : team.id)}
                  >
                    {open === team.id ? 'Close' : 'Open'} {team.name}
                  </button>
                }
                footer={open === team.id ? <Team id={team.id} /> : null}
              >
                <p class="muted">{team.member_count} members</p>
              </ItemCard>
            )}
          </ItemList>
        )}
      </WhenLoaded>
    </Page>
  );
}

function Team({ id }: { id: string }) {
  const team = useLoad(async () => data(api.GET('/teams/{team_id}', { params: { path: { team_id: id } } })), [id]);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<'member' | 'owner'>('member');
  const [message, setMessage] = useState('');
  const [invited, setInvited] = useState<string | null>(null);
  const [broadcastId, setBroadcastId] = useState<string | null>(null);
  const invite = useAction();
  const broadcast = useAction();
  const path = { team_id: id };
  return (
    <WhenLoaded state={team} what="the team">
      {(value) => (
        <div class="panel">
          <h4>Members</h4>
          <ul>
            {value.members.map((member) => (
              <li key={member.user_id}>
                {member.email ?? member.user_id} · {member.role} · joined {formatDate(member.joined_at)}
              </li>
            ))}
          </ul>
          {value.role === 'owner' ? (
            <Form
              inline
              onSubmit={async () => {
                const body = { email: email.trim(), role };
                if (await invite.run(() => data(api.POST('/teams/{team_id}/invite', { params: { path }, body })))) {
                  setInvited(`Invitation sent to ${body.email}.`);
                  setEmail('');
                }
              }}
            >
              <TextField
                id={`invite-${id}`}
                label="Invite by e-mail"
                inline
                type="email"
                required
                value={email}
                onValue={setEmail}
              />
              <SelectField
                id={`role-${id}`}
                label="Role"
                inline
                value={role}
                options={roles}
                onValue={(value) => setRole(value as 'member' | 'owner')}
              />
              <FormActions submit="Invite" action={invite} secondary inline />
            </Form>
          ) : null}
          <StatusNote>{invited}</StatusNote>
          <Form
            onSubmit={() =>
              broadcast.run(async () => {
                const body = { message: message.trim() };
                const started = await data(api.POST('/teams/{team_id}/broadcast', { params: { path }, body }));
                setBroadcastId(started.id);
                setMessage('');
              })
            }
          >
            <TextArea
              id={`broadcast-${id}`}
              label="Broadcast to every member"
              rows={2}
              required
              value={message}
              onValue={setMessage}
            />
            <FormActions submit="Broadcast" action={broadcast} />
          </Form>
          {broadcastId ? <Deliveries teamId={id} broadcastId={broadcastId} /> : null}
        </div>
      )}
    </WhenLoaded>
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
  return (
    <WhenLoaded state={broadcast} what="deliveries">
      {(value) => (
        <section aria-label="Deliveries">
          <p role="status">Broadcast {value.status}</p>
          <ul>
            {value.deliveries.map((delivery) => (
              <li key={delivery.user_id}>
                {delivery.email ?? delivery.user_id}: {delivery.status}
              </li>
            ))}
          </ul>
        </section>
      )}
    </WhenLoaded>
  );
}
