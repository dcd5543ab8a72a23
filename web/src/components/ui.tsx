/**
 * Small pieces every page uses: loading with errors, error and status notes, copy, dates and numbers. Forms, lists,
 * tables, confirmations and the page's frame are in the files beside this one (form, list, table, confirm, layout).
 */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { describeError } from '../api/client.ts';

export interface Loaded<T> {
  value: T | undefined;
  error: unknown;
  loading: boolean;
  reload(): Promise<void>;
}

/** Runs `load` now and whenever `keys` change; a slower answer to an older call is dropped. */
export function useLoad<T>(load: () => Promise<T>, keys: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ value: T | undefined; error: unknown; loading: boolean }>({
    value: undefined,
    error: null,
    loading: true,
  });
  const generation = useRef(0);
  const run = useCallback(async () => {
    const mine = ++generation.current;
    setState((previous) => ({ ...previous, loading: true }));
    try {
      const value = await load();
      if (mine === generation.current) setState({ value, error: null, loading: false });
    } catch (error) {
      if (mine === generation.current) setState((previous) => ({ ...previous, error, loading: false }));
    }
  }, keys);
  useEffect(() => {
    void run();
  }, [run]);
  return { ...state, reload: run };
}

/**
 * An action's progress and failure: `run(fn)` marks it busy, and a failure becomes `error` (the API's message).
 * Answers whether it succeeded.
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = useCallback(async (action: () => Promise<unknown>): Promise<boolean> => {
    setBusy(true);
    setError(null);
    try {
      await action();
      return true;
    } catch (failure) {
      setError(failure);
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(null) };
}

export function ErrorNote({ error, prefix }: { error: unknown; prefix?: string }) {
  if (!error) return null;
  return (
    <p class="note error" role="alert">
      {prefix ? `${prefix}: ` : ''}
      {describeError(error)}
    </p>
  );
}

/** A polite announcement for screen readers and a visible line; nothing while there is nothing to say. */
export function StatusNote({ children }: { children: ComponentChildren }) {
  if (children === null || children === undefined || children === false || children === '') return null;
  return (
    <p class="note status" role="status">
      {children}
    </p>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="loading" role="status">
      Loading {what}…
    </p>
  );
}

/**
 * What `useLoad` holds, shown: its failure (after `errorPrefix`), "Loading …" until the first answer, then
 * `children` drawn from the value (kept on screen, with the error above it, when a reload fails).
 */
export function WhenLoaded<T>(props: {
  state: Loaded<T>;
  what: string;
  errorPrefix?: string;
  children(value: T): ComponentChildren;
}) {
  const { value, error } = props.state;
  return (
    <>
      <ErrorNote error={error} prefix={props.errorPrefix} />
      {value !== undefined ? props.children(value) : error ? null : <Loading what={props.what} />}
    </>
  );
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [copied, setCopied] = useState<string | null>(null);
  return (
    <button
      type="button"
      class="secondary"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
          setCopied('Copied');
        } catch {
          setCopied('Copying was refused: select the text and copy it');
        }
      }}
    >
      {copied ?? label}
    </button>
  );
}

export function PageHeader({ title, children }: { title: string; children?: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · Tessera`;
  }, [title]);
  return (
    <header class="page-header">
      <h1 id="page-title">{title}</h1>
      {children}
    </header>
  );
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const number = new Intl.NumberFormat();

export function formatDate(value: string | number | Date | null | undefined): string {
  if (value === null || value === undefined || value === '') return '—';
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? String(value) : dateTime.format(date);
}

export function formatNumber(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : number.format(value);
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

export function formatUsd(value: number): string {
  return value < 0.01 && value > 0 ? `$${value.toFixed(6)}` : `$${value.toFixed(2)}`;
}

export function Json({ value }: { value: unknown }) {
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  return <pre class="json">{text}</pre>;
}
