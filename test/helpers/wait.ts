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
