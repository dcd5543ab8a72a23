/**
 * The app's shell: who is logged in (or the login page), the navigation, the theme switch, and the pages
 * (web/routes.ts lists their paths; the agent service answers each with index.html), the operator console's among
 * them for an admin. Pages other than the chat are loaded when first opened, so the first load carries the chat only.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { ErrorBoundary, lazy, LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { pagePaths } from '../routes.ts';
import { Account, loadMe, type LoggedIn, type Me } from './account.tsx';
import { api, data, describeError } from './api/client.ts';
import { ChatPage } from './chat/chat-page.tsx';
import { LoginPage } from './pages/login.tsx';
import { applyTheme, savedTheme, type ThemeChoice } from './theme.ts';
import { formatNumber } from './components/ui.tsx';

const AgentsPage = lazy(() => import('./pages/agents.tsx').then((module) => module.AgentsPage));
const MemoriesPage = lazy(() => import('./pages/memories.tsx').then((module) => module.MemoriesPage));
const SchedulesPage = lazy(() => import('./pages/schedules.tsx').then((module) => module.SchedulesPage));
const SitesPage = lazy(() => import('./pages/sites.tsx').then((module) => module.SitesPage));
const FilesPage = lazy(() => import('./pages/files.tsx').then((module) => module.FilesPage));
const TeamsPage = lazy(() => import('./pages/teams.tsx').then((module) => module.TeamsPage));
const SettingsPage = lazy(() => import('./pages/settings.tsx').then((module) => module.SettingsPage));
// The operator console (src/admin/): one chunk for its pages, never loaded by a person who does not open it.
const admin = () => import('./admin/index.ts');
const AdminOverviewPage = lazy(() => admin().then((module) => module.AdminOverviewPage));
const AdminUsersPage = lazy(() => admin().then((module) => module.AdminUsersPage));
const AdminUserPage = lazy(() => admin().then((module) => module.AdminUserPage));
const AdminActivityPage = lazy(() => admin().then((module) => module.AdminActivityPage));
const AdminAuditPage = lazy(() => admin().then((module) => module.AdminAuditPage));

const navigation: Array<[string, string]> = [
  [pagePaths.chat, 'Chat'],
  [pagePaths.agents, 'Agents'],
  [pagePaths.memories, 'Memories'],
  [pagePaths.schedules, 'Schedules'],
  [pagePaths.sites, 'Sites'],
  [pagePaths.files, 'Files'],
  [pagePaths.teams, 'Teams'],
  [pagePaths.settings, 'Settings'],
];

export function App() {
  const [me, setMe] = useState<Me | null>(null);
  const [error, setError] = useState<unknown>(null);
  const reload = async () => {
    try {
      setMe(await loadMe());
      setError(null);
    } catch (failure) {
      setError(failure);
    }
  };
  useEffect(() => {
    void reload();
  }, []);

  if (!me) {
    return (
      <main id="main" class="centered">
        {error ? (
          <div>
            <p class="note error" role="alert">
              {describeError(error)}
            </p>
            <button type="button" onClick={reload}>
              Try again
            </button>
          </div>
        ) : (
          <p role="status">Loading…</p>
        )}
      </main>
    );
  }
  if (!me.logged_in) return <LoginPage aiName={me.ai_name} />;
  return (
    <Account.Provider value={{ me, reload }}>
      <LocationProvider>
        <Shell me={me} />
      </LocationProvider>
    </Account.Provider>
  );
}

function Shell({ me }: { me: LoggedIn }) {
  const location = useLocation();
  const [menuOpen, setMenuOpen] = useState(false);
  const main = useRef<HTMLElement>(null);
  const firstRender = useRef(true);
  // After a navigation, focus moves to the new page's content (keyboard and screen-reader users land there).
  useEffect(() => {
    setMenuOpen(false);
    if (firstRender.current) {
      firstRender.current = false;
      return;
    }
    main.current?.focus();
  }, [location.path]);

  const current = (path: string) =>
    path === pagePaths.chat
      ? location.path === '/' || location.path.startsWith('/chats/')
      : path === pagePaths.admin
        ? location.path === path || location.path.startsWith(`${path}/`)
        : location.path === path;
  // An admin's browser (GET /auth/me: `admin`) gets the console in the navigation; it is at /admin for anyone, and
  // tells a person who is not an operator so.
  const links = me.admin ? [...navigation, [pagePaths.admin, 'Admin'] as [string, string]] : navigation;

  return (
    <div class="shell">
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class={`topbar${menuOpen ? ' menu-open' : ''}`}>
        <button
          type="button"
          class="menu-button icon-button"
          aria-expanded={menuOpen}
          aria-controls="site-navigation"
          onClick={() => setMenuOpen(!menuOpen)}
        >
          <span aria-hidden="true">☰</span>
          <span class="visually-hidden">Menu</span>
        </button>
        <a class="brand" href="/">
          {me.ai_name ?? 'Tessera'}
        </a>
        <nav id="site-navigation" aria-label="Main" class={menuOpen ? 'open' : ''}>
          <ul>
            {links.map(([path, label]) => (
              <li key={path}>
                <a href={path} aria-current={current(path) ? 'page' : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <AccountMenu me={me} />
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        <ErrorBoundary>
          <Router>
            <Route path={pagePaths.chat} component={ChatPage} />
            <Route path={pagePaths.session} component={ChatPage} />
            <Route path={pagePaths.agents} component={AgentsPage} />
            <Route path={pagePaths.memories} component={MemoriesPage} />
            <Route path={pagePaths.schedules} component={SchedulesPage} />
            <Route path={pagePaths.sites} component={SitesPage} />
            <Route path={pagePaths.files} component={FilesPage} />
            <Route path={pagePaths.teams} component={TeamsPage} />
            <Route path={pagePaths.settings} component={SettingsPage} />
            <Route path={pagePaths.admin} component={AdminOverviewPage} />
            <Route path={pagePaths.adminUsers} component={AdminUsersPage} />
            <Route path={pagePaths.adminUser} component={AdminUserPage} />
            <Route path={pagePaths.adminActivity} component={AdminActivityPage} />
            <Route path={pagePaths.adminAudit} component={AdminAuditPage} />
            <Route default component={NotFound} />
          </Router>
        </ErrorBoundary>
      </main>
    </div>
  );
}

function AccountMenu({ me }: { me: LoggedIn }) {
  const [theme, setTheme] = useState<ThemeChoice>(savedTheme());
  const [error, setError] = useState<unknown>(null);
  const logout = async () => {
    try {
      await data(api.POST('/auth/logout'));
      location.assign('/');
    } catch (failure) {
      setError(failure);
    }
  };
  return (
    <div class="account">
      <p class="who">
        <span class="email">{me.user?.email ?? 'Signed in'}</span>
        <span class="credits">
          <span data-testid="credit-balance">{formatNumber(me.credits?.balance)}</span> credits ·{' '}
          <span class="plan-name">{me.user?.plan ?? '—'}</span> plan
        </span>
      </p>
      <label class="theme-switch">
        <span class="visually-hidden">Theme</span>
        <select
          value={theme}
          onChange={(event) => {
            const choice = (event.target as HTMLSelectElement).value as ThemeChoice;
            setTheme(choice);
            applyTheme(choice);
          }}
        >
          <option value="system">System theme</option>
          <option value="light">Light</option>
          <option value="dark">Dark</option>
        </select>
      </label>
      <button type="button" class="secondary" onClick={logout}>
        Log out
      </button>
      {error ? (
        <p class="note error" role="alert">
          Logging out failed: {describeError(error)}
        </p>
      ) : null}
    </div>
  );
}

function NotFound() {
  return (
    <section class="page">
      <h1>Page not found</h1>
      <p>
        There is no page here. <a href="/">Go to the chat</a>.
      </p>
    </section>
  );
}
