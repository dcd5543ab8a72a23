/**
 * `a2a-task-<id>`: one inbound A2A task (api/agents/routes/a2a/). It holds the task's state — submitted → working →
 * completed / failed / canceled, with `input-required` while the agent waits for approval — as the API process
 * reports it (the `a2aTaskUpdate` signal), and answers the `a2aTask` query: the record an executor resumes from after
 * a restart (which turn answers the task, which approval it waits for, the last event relayed). The agent's work runs
 * in the `chatTurn` workflow the record names; the task's messages, artifacts and status for `tasks/get` are kept by
 * the SDK's task store in PostgreSQL. It ends when the task reaches a terminal state, returning the record.
 */
import { condition, defineQuery, defineSignal, setHandler, workflowInfo } from '@temporalio/workflow';
import { terminalA2aStates, type A2aTaskRecord, type A2aTaskUpdate } from '../common/a2a-task.ts';

export const a2aTaskUpdateSignal = defineSignal<[A2aTaskUpdate]>('a2aTaskUpdate');
export const a2aTaskQuery = defineQuery<A2aTaskRecord>('a2aTask');

export interface A2aTaskInput {
  taskId: string;
  contextId: string;
  userId: string;
}

export async function a2aTask(input: A2aTaskInput): Promise<A2aTaskRecord> {
  const record: A2aTaskRecord = {
    ...input,
    state: 'submitted',
    turnId: null,
    approvalId: null,
    seq: -1,
    history: [{ state: 'submitted', at: workflowInfo().startTime.toISOString() }],
  };
  setHandler(a2aTaskQuery, () => record);
  setHandler(a2aTaskUpdateSignal, (update) => {
    // A terminal state is final: a late update from a turn that was cancelled does not reopen the task.
    if (terminalA2aStates.includes(record.state)) return;
    if (update.turnId !== undefined) record.turnId = update.turnId;
    if (update.approvalId !== undefined) record.approvalId = update.approvalId;
    if (update.seq !== undefined) record.seq = Math.max(record.seq, update.seq);
    if (update.state !== record.state) {
      record.state = update.state;
      record.history.push({ state: update.state, at: new Date(Date.now()).toISOString() });
    }
  });
  await condition(() => terminalA2aStates.includes(record.state));
  return record;
}
