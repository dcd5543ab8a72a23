/** How to read the errors PostgreSQL (through `pg`) raises. */

/**
 * Whether the same statement with the same values would fail the same way again: SQLSTATE class 22 (data exception:
 * a NUL in text, a value out of range, malformed input) and class 54 (program limit exceeded: a text too long for
 * its index). Retrying such a step can only repeat the failure, so a durable step ends instead of retrying for ever.
 * Everything else (connection loss, a restarting server, deadlocks, serialization failures) may pass on a retry.
 */
export function isDeterministicDatabaseError(error: unknown): error is Error & { code: string } {
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error && typeof code === 'string' && /^(?:22|54)[0-9A-Z]{3}$/.test(code);
}

/**
 * Whether an error says the platform's own database could not be reached or is not serving right now, rather than
 * anything about the statement: a refused, reset or timed-out connection (the server is down, restarting, paused or
 * out of reach), a connection the server ended (SQLSTATE class 08 and 57P01-57P03: shut down, crashed, starting up),
 * too many connections (53300), or a disk the server cannot write (53100 disk full, 58030 I/O error, 25006 a
 * read-only transaction). Such a step waits and tries again (a workflow is durable: it can wait for the store); the
 * API answers 503 with Retry-After (api/errors.ts). The cause chain is followed: MikroORM wraps the driver's error.
 */
export function isStoreOutage(error: unknown): boolean {
  return someCause(error, isOutageCause);
}

/** Whether `test` holds for the error or for one of its causes (`cause`, six deep at most). */
export function someCause(error: unknown, test: (cause: object) => boolean): boolean {
  for (let cause = error, depth = 0; cause && depth < 6; depth++) {
    if (typeof cause === 'object' && test(cause)) return true;
    cause = (cause as { cause?: unknown }).cause;
  }
  return false;
}

const outageErrnos = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH']);
const outageSqlStates = /^(?:08[0-9A-Z]{3}|57P0[123]|53300|53100|58030|25006)$/;
const outageMessages = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'Connection is closed',
  'Client was closed and is not queryable',
  'the database system is',
];

function isOutageCause(cause: unknown): boolean {
  if (typeof cause !== 'object' || cause === null) return false;
  const code = (cause as { code?: unknown }).code;
  if (typeof code === 'string' && (outageErrnos.has(code) || outageSqlStates.test(code))) return true;
  // pg-pool aggregates the attempts of a dual-stack connect (AggregateError of ECONNREFUSED).
  if (cause instanceof AggregateError && cause.errors.some(isOutageCause)) return true;
  const message = (cause as { message?: unknown }).message;
  return typeof message === 'string' && outageMessages.some((text) => message.includes(text));
}
