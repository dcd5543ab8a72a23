/**
 * The console's users (`/admin/users`): found by the start of their address or by their id (`GET /admin/api/users`,
 * read from an index), or everyone newest first, 25 to a page, with plan, credits, keys and the admin role; each
 * leads to its own page. The search and the page are in the address (`?q=…&after=…`, `after` being the previous
 * page's `next`), so a reload or a shared link shows the same list, and the browser's Back goes to the page before.
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
  const after = location.query.after ?? '';
  const [query, setQuery] = useState(searched);
  const users = useLoad(
    () =>
      data(
        api.GET('/admin/api/users', {
          params: { query: { ...(searched ? { q: searched } : {}), ...(after ? { after } : {}), limit: pageSize } },
        }),
      ),
    [searched, after],
  );
  const go = (q: string, from?: string) => {
    const parameters = new URLSearchParams();
    if (q) parameters.set('q', q);
    if (from) parameters.set('after', from);
    const search = parameters.toString();
    location.route(`${pagePaths.adminUsers}${search ? `?${search}` : ''}`);
  };
  const value = users.value;
  const count = value?.users.length ?? 0;
  return (
    <>
      <form
        role="search"
        class="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          go(query.trim());
        }}
      >
        <label for="user-search">Find users by the start of their e-mail address, or by id</label>
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
              go('');
            }}
          >
            Show everyone
          </button>
        ) : null}
      </form>
      <ErrorNote error={users.error} />
      {value ? (
        count === 0 ? (
          <p class="muted">
            {searched
              ? `No user’s address starts with “${searched}”, and no user has it as id.`
              : after
                ? 'No more users.'
                : 'No users yet.'}
          </p>
        ) : (
          <>
            <p role="status">
              {count === 1 ? '1 user' : `${formatNumber(count)} users`}
              {searched ? ` whose address starts with “${searched}” (or whose id it is)` : ', newest first'}
              {after ? ', continued' : ''}.
            </p>
            <ScrollTable
              label="Users"
              caption={searched ? 'Users found, by address' : 'Users, newest first'}
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
          </>
        )
      ) : users.error ? null : (
        <Loading what="users" />
      )}
      {value && (after || value.next) ? (
        <nav aria-label="Pages of users" class="button-row">
          {after ? (
            <button type="button" class="secondary" onClick={() => go(searched)}>
              First page
            </button>
          ) : null}
          {value.next ? (
            <button type="button" class="secondary" onClick={() => go(searched, value.next!)}>
              Next page
            </button>
          ) : null}
        </nav>
      ) : null}
    </>
  );
}
