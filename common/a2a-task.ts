/**
 * Workflow-safe types of an inbound A2A task (workflows/a2a-task.workflow.ts, api/agents/routes/a2a/). No zod here:
 * the workflow bundle imports this file.
 */

/** The A2A task states the agent service uses (v0.3 names; the SDK's v1.0 enum maps one to one). */
export type A2aTaskState = 'submitted' | 'working' | 'input-required' | 'completed' | 'failed' | 'canceled';

export const terminalA2aStates: readonly A2aTaskState[] = ['completed', 'failed', 'canceled'];

/** What the task workflow holds, and answers to the `a2aTask` query. */
export interface A2aTaskRecord {
  taskId: string;
  contextId: string;
  /** The user the task belongs to (the calling key's). */
  userId: string;
  state: A2aTaskState;
  /** The agent turn (a `chatTurn` workflow) currently answering the task. */
  turnId: string | null;
  /** Set in `input-required`: the tool call waiting for approve/reject. */
  approvalId: string | null;
  /** The last turn event relayed, so a resumed task follows the turn from there. */
  seq: number;
  /** Every state the task went through, oldest first. */
  history: Array<{ state: A2aTaskState; at: string }>;
}

/** A change to the task, sent by the API process as the turn progresses. */
export interface A2aTaskUpdate {
  state: A2aTaskState;
  turnId?: string;
  approvalId?: string | null;
  seq?: number;
}

export function a2aTaskWorkflowId(taskId: string): string {
  return `a2a-task-${taskId}`;
}
