/**
 * Light and dark themes: the system's by default (prefers-color-scheme), or the person's choice. The choice is the
 * one thing the app keeps in localStorage: not a secret (the session stays in its HttpOnly cookie).
 */
export type ThemeChoice = 'system' | 'light' | 'dark';

const key = 'tessera-theme';

export function savedTheme(): ThemeChoice {
  const value = localStorage.getItem(key);
  return value === 'light' || value === 'dark' ? value : 'system';
}

export function applyTheme(choice: ThemeChoice): void {
  if (choice === 'system') {
    delete document.documentElement.dataset.theme;
    localStorage.removeItem(key);
  } else {
    document.documentElement.dataset.theme = choice;
    localStorage.setItem(key, choice);
  }
}
