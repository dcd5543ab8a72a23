/**
 * Runs one tool call the way every tool is run: the model's arguments parsed, held to the platform's text rule and
 * checked against the tool's schema, the tool given its timeout and the caller's cancellation (its signal aborts, and
 * the call ends even if the tool ignores the signal), and its output made text and cut to the tool's cap. A failure the model should read comes back as `{ok: false}`; a
 * retryable one (timeout, upstream trouble) is thrown as a retryable `ToolError`, for the caller's retry policy.
 */
import { z } from 'zod';
import { findTextProblem } from '../../common/text.ts';
import { ToolError, type ToolContext, type ToolDefinition } from './tool.ts';

export interface ToolOutcome {
  ok: boolean;
  /** What the model reads: the output, or the error. */
  content: string;
}

/** The JSON schema offered to the model for a tool's input. */
export function toolJsonSchema(tool: ToolDefinition): Record<string, unknown> {
  const { $schema: _schema, ...schema } = z.toJSONSchema(tool.input) as Record<string, unknown>;
  return schema;
}

export async function runTool(
  tool: ToolDefinition,
  rawArguments: string,
  context: Omit<ToolContext, 'signal'>,
  outer?: AbortSignal,
): Promise<ToolOutcome> {
  let parsedJson: unknown;
  try {
    parsedJson = rawArguments.trim() === '' ? {} : JSON.parse(rawArguments);
  } catch {
    return { ok: false, content: `${tool.name}: the arguments are not valid JSON` };
  }
  // The platform's text rule (common/text.ts) holds for what a model sends a tool as for what a client sends the API:
  // a NUL or control character in an argument would otherwise reach a file, a memory or a page.
  const unacceptable = findTextProblem(parsedJson);
  if (unacceptable) {
    const where = unacceptable.path.join('.') || 'input';
    return { ok: false, content: `${tool.name}: invalid arguments (${where}: ${unacceptable.problem})` };
  }
  const input = tool.input.safeParse(parsedJson);
  if (!input.success) {
    const issues = input.error.issues.map((issue) => `${issue.path.join('.') || 'input'}: ${issue.message}`);
    return { ok: false, content: `${tool.name}: invalid arguments (${issues.join('; ')})` };
  }
  // Cancelled (`outer`: the activity's cancellation, a person's Stop): the call ends at once, like a timeout, whether
  // or not the tool heeds its signal; what it already did stays done. A call cancelled before it began does not run.
  // (The caller decides what the cancellation means: chat-activities.ts records a Stop, and not Temporal's own.)
  const cancelled = () => ({ ok: false, content: `${tool.name}: the call was cancelled` });
  if (outer?.aborted) return cancelled();
  const abort = new AbortController();
  const cancelledCall = Promise.withResolvers<typeof cancelledMark>();
  const onOuterAbort = () => {
    abort.abort(outer?.reason);
    cancelledCall.resolve(cancelledMark);
  };
  outer?.addEventListener('abort', onOuterAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      abort.abort(new Error('timeout'));
      reject(new ToolError(`${tool.name} did not finish within ${tool.timeoutMs / 1000} s`, { retryable: true }));
    }, tool.timeoutMs);
  });
  try {
    const output = await Promise.race([
      tool.run(input.data, { ...context, signal: abort.signal }),
      timedOut,
      cancelledCall.promise,
    ]);
    if (output === cancelledMark) return cancelled();
    return { ok: true, content: capOutput(format(output), tool.maxOutputChars) };
  } catch (error) {
    if (outer?.aborted) return cancelled();
    if (error instanceof ToolError) {
      if (error.retryable) throw error;
      return { ok: false, content: `${tool.name}: ${error.message}` };
    }
    // Anything else is a bug or an unexpected failure: the model gets a plain message, not a stack trace.
    return { ok: false, content: `${tool.name} failed: ${error instanceof Error ? error.message : String(error)}` };
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', onOuterAbort);
  }
}

/** What the race of a cancelled call settles with (never a tool's output). */
const cancelledMark = Symbol('cancelled');

function format(output: unknown): string {
  if (typeof output === 'string') return output;
  return JSON.stringify(output ?? null);
}

function capOutput(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}\n… (output cut: ${text.length - maxChars} more characters)`;
}
