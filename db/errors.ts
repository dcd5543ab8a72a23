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
