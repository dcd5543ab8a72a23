/** Waiting in tests for what the platform does in the background (a workflow's run, a delivery). */
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';

/** Calls `probe` every 250 ms until it returns something truthy, and returns that; throws after `ms`. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false>,
  ms = 30_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Resolves once the workflow `workflowId` has closed, whatever its outcome: everything it sends (a callback, an answer
 * forwarded to a chat) has been sent, and nothing more will come from it. What to wait for before checking that
 * something happened once, rather than a fixed pause in which a second copy "would have arrived".
 */
export async function workflowClosed(temporalAddress: string, workflowId: string): Promise<void> {
  const connection = await Connection.connect({ address: temporalAddress });
  try {
    await new Client({ connection }).workflow
      .getHandle(workflowId)
      .result()
      .catch((error: unknown) => {
        if (!(error instanceof WorkflowFailedError)) throw error;
      });
  } finally {
    await connection.close();
  }
}

/**
 * What the platform's Temporal holds, for a failed test's log: each workflow (newest first, at most `limit`) with its
 * status and, while open, its pending workflow task and activities (attempt, last failure). A background step that
 * never came is then named: not started, waiting for a worker, or retrying an activity and why.
 */
export async function workflowReport(temporalAddress: string, limit = 20): Promise<string> {
  const connection = await Connection.connect({ address: temporalAddress, connectTimeout: 5_000 });
  try {
    const client = new Client({ connection });
    const lines: string[] = [];
    for await (const info of client.workflow.list()) {
      if (lines.length >= limit) break;
      let line = `${info.workflowId} ${info.type} ${info.status.name} started ${info.startTime.toISOString()}`;
      if (info.status.name === 'RUNNING') {
        const { raw } = await client.workflow.getHandle(info.workflowId, info.runId).describe();
        const task = raw.pendingWorkflowTask;
        if (task) line += `\n  workflow task: ${String(task.state)} attempt ${String(task.attempt)}`;
        for (const activity of raw.pendingActivities ?? []) {
          line +=
            `\n  activity ${String(activity.activityType?.name)}: ${String(activity.state)} attempt ` +
            `${String(activity.attempt)}${activity.lastFailure ? `, last failure: ${String(activity.lastFailure.message)}` : ''}`;
        }
      }
      lines.push(line);
    }
    return lines.join('\n') || '(no workflows)';
  } finally {
    await connection.close();
  }
}
