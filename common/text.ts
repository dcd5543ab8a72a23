/**
 * What text the platform accepts, decided once (docs/operations.md, "Text the platform accepts"). Workflow-safe.
 *
 * Every string a caller sends (body fields and keys, path segments, query parameters, messages from the messaging
 * apps) must be well-formed Unicode without C0 control characters other than tab, line feed and carriage return.
 * NUL is the one PostgreSQL cannot store at all (`text` and `jsonb` refuse it: a statement fails, and a retried
 * step fails again for ever); the other C0 controls have no business in chat text, names or prompts and confuse
 * terminals, logs and the models; an unpaired UTF-16 surrogate (`"\ud800"` in JSON) is not a character, and would
 * be silently replaced on its way to the database, so what was accepted would not be what was stored. DEL and the
 * C1 controls are left alone: PostgreSQL stores them and the issue of them is cosmetic.
 *
 * The HTTP edge refuses such text with a 400 naming the field (api/text-policy.ts). Text the platform did not take
 * from a caller (a model's answer, a tool's output, a fetched page) is not refused, since nobody could correct it:
 * `storableText` replaces what PostgreSQL cannot store before it is written.
 */

// Tab (09), line feed (0A) and carriage return (0D) are allowed. Matching control characters is the point here.
// eslint-disable-next-line no-control-regex
const forbiddenControl = /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/;

/** Why `value` is not acceptable text, or null when it is. */
export function textProblem(value: string): string | null {
  const control = forbiddenControl.exec(value);
  if (control) {
    const code = control[0].charCodeAt(0);
    const name = code === 0 ? 'the NUL character' : 'a control character';
    return (
      `contains ${name} (U+${code.toString(16).toUpperCase().padStart(4, '0')}) at position ${control.index}; ` +
      'text may not contain control characters other than tab, line feed and carriage return'
    );
  }
  if (!value.isWellFormed()) {
    return 'contains an unpaired UTF-16 surrogate, which is not a character (the text is not valid Unicode)';
  }
  return null;
}

/** Where in a JSON value the first unacceptable text is (a string or an object key), and why; null when none. */
export function findTextProblem(value: unknown): { path: Array<string | number>; problem: string } | null {
  // Iterative (a body may be nested deeper than the call stack allows), and each entry links to its parent rather
  // than copying its path: the path is only built for the one field that is reported.
  interface Entry {
    value: unknown;
    key: string | number | null;
    parent: Entry | null;
  }
  const pathOf = (entry: Entry | null, last?: string): Array<string | number> => {
    const path: Array<string | number> = last === undefined ? [] : [last];
    for (let at = entry; at && at.key !== null; at = at.parent) path.unshift(at.key);
    return path;
  };
  const pending: Entry[] = [{ value, key: null, parent: null }];
  while (pending.length > 0) {
    const entry = pending.pop()!;
    const current = entry.value;
    if (typeof current === 'string') {
      const problem = textProblem(current);
      if (problem) return { path: pathOf(entry), problem };
    } else if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index--) {
        pending.push({ value: current[index], key: index, parent: entry });
      }
    } else if (current !== null && typeof current === 'object') {
      const keys = Object.keys(current);
      for (let index = keys.length - 1; index >= 0; index--) {
        const key = keys[index]!;
        const problem = textProblem(key);
        if (problem) return { path: pathOf(entry, key), problem: `has a field name that ${problem}` };
        pending.push({ value: (current as Record<string, unknown>)[key], key, parent: entry });
      }
    }
  }
  return null;
}

/**
 * `value` as PostgreSQL can store it: each NUL replaced by U+FFFD (the replacement character). For text the
 * platform produced or fetched rather than accepted (model answers, tool results), which must never fail a write.
 */
export function storableText(value: string): string {
  return value.includes('\u0000') ? value.replaceAll('\u0000', '\ufffd') : value;
}

/** `JSON.stringify(value)` with every string made storable (`storableText`): for `jsonb`, which refuses `\u0000`. */
export function storableJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => (typeof item === 'string' ? storableText(item) : item));
}
