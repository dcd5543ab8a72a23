/**
 * The console's users (`/admin/users`): find them by part of their address or by id, 25 to a page, newest first,
 * with plan, credits, keys and the admin role (`GET /admin/api/users`); each leads to its own page. The search and
 * the page are in the address (`?q=…&page=…`), so a reload or a shared link shows the same list.
 */
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { pagePaths } from '../../routes.ts';
import { api, data } from '../api/client.ts';
import { ErrorNote, formatDate, formatNumber, Loading, useLoad } from '../components/ui.tsx';
import { AdminGate, ScrollTable } from './shared.tsx';

const pageSize = 25;

export function AdminUsersPage() {
  return (
    <AdminGate title="Users">
      <Users />
    </AdminGate>
  );
}

function Users() {
  const location = useLocation();
  const searched = location.query.q ?? '';
  const page = Math.max(1, Number(location.query.page) || 1);
  const [query, setQuery] = useState(searched);
  const users = useLoad(
    () =>
      data(
        api.GET('/admin/api/users', {
          params: { query: { ...(searched ? { q: searched } : {}), limit: pageSize, offset: (page - 1) * pageSize } },
        }),
      ),
    [searched, page],
  );
  const go = (q: string, to: number) => {
    const parameters = new URLSearchParams();
    if (q) parameters.set('q', q);
    if (to > 1) parameters.set('page', String(to));
    const search = parameters.toString();
    location.route(`${pagePaths.adminUsers}${search ? `?${search}` : ''}`);
  };
  const value = users.value;
  const last = value ? Math.max(1, Math.ceil(value.total / pageSize)) : 1;
  return (
    <>
      <form
        role="search"
        class="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          go(query.trim(), 1);
        }}
      >
        <label for="user-search">Find users by e-mail address or id</label>
        <input
          id="user-search"
          type="search"
          maxLength={254}
          value={query}
          onInput={(event) => setQuery((event.target as HTMLInputElement).value)}
        />
        <button type="submit">Search</button>
        {searched ? (
          <button
            type="button"
            class="link-button"
            onClick={() => {
              setQuery('');
              go('', 1);
            }}
          >
            Show everyone
          </button>
        ) : null}
      </form>
      <ErrorNote error={users.error} />
      {value ? (
        value.users.length === 0 ? (
          <p class="muted">{searched ? `No user matches “${searched}”.` : 'No users yet.'}</p>
        ) : (
          <>
            <p role="status">
              {value.total === 1
                ? 'One user'
                : `Users ${formatNumber(value.offset + 1)} to ${formatNumber(value.offset + value.users.length)} of ${formatNumber(value.total)}`}
              {searched ? ` matching “${searched}”` : ''}.
            </p>
            <ScrollTable
              label="Users"
              caption="Users, newest first"
              columns={['User', 'Plan', { title: 'Credits', number: true }, { title: 'Keys', number: true }, 'Joined']}
            >
              {value.users.map((user) => (
                <tr key={user.id}>
                  <th scope="row">
                    <a href={`${pagePaths.adminUsers}/${encodeURIComponent(user.id)}`}>{user.email ?? user.id}</a>
                    {user.admin ? <span class="badge">admin</span> : null}
                    {user.email ? (
                      <>
                        <br />
                        <small class="muted">{user.id}</small>
                      </>
                    ) : null}
                  </th>
                  <td>{user.plan}</td>
                  <td class="number">{formatNumber(user.credits.available)}</td>
                  <td class="number">{formatNumber(user.keys)}</td>
                  <td>{formatDate(user.created_at)}</td>
                </tr>
              ))}
            </ScrollTable>
            {last > 1 ? (
              <nav aria-label="Pages of users" class="button-row">
                <button type="button" class="secondary" disabled={page <= 1} onClick={() => go(searched, page - 1)}>
                  Previous page
                </button>
                <span>
                  Page {page} of {last}
                </span>
                <button type="button" class="secondary" disabled={page >= last} onClick={() => go(searched, page + 1)}>
                  Next page
                </button>
              </nav>
            ) : null}
          </>
        )
      ) : users.error ? null : (
        <Loading what="users" />
      )}
    </>
  );
}
