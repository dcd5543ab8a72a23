/**
 * What a process makes once, at its first use, and keeps: a library imported only when a request needs it, a client
 * made then (issue 29: a process carries only what its requests use; docs/benchmarks.md, "Memory"). A load that
 * fails is forgotten, so the next use tries again.
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | null = null;
  return () =>
    (loaded ??= load().catch((error: unknown) => {
      loaded = null;
      throw error;
    }));
}
