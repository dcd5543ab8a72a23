/**
 * What the agent service's turns and loops share between the API and the workflow (workflows/chat-turn.workflow.ts):
 * loop markers and prompts, and approval ids. Workflow-safe and free of zod (the workflow bundle imports it).
 */

/** The marker an agent loop's iteration ends with. */
export function loopMarker(text: string): 'continue' | 'done' | 'none' {
  const tail = text.trimEnd();
  if (tail.endsWith('[[CONTINUE]]')) return 'continue';
  if (tail.endsWith('[[DONE]]')) return 'done';
  return 'none';
}

/** The user message that asks a loop's agent for its next iteration. */
export const loopContinuePrompt =
  'Continue with the next step. End your answer with [[CONTINUE]] if more steps remain, or [[DONE]] when the task is complete.';

/** The instruction added to a loop agent's system prompt. */
export const loopSystemInstruction =
  'You are working in iterations on a task. Each answer does one step of the work. End every answer with [[CONTINUE]] when more steps remain, or with [[DONE]] when the task is complete.';

/** The approval id of a turn's tool call: the turn's id and the call's stream position. */
export function approvalId(turnId: string, seq: number): string {
  return `${turnId}~${seq}`;
}

/** The turn an approval id belongs to, or null for a malformed id. */
export function turnOfApproval(id: string): string | null {
  const match = /^(chat-[A-Za-z0-9_-]+-\d+)~\d+$/.exec(id);
  return match ? match[1]! : null;
}
