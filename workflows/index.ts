/** Every workflow the worker registers. */
export { chatCompletion, completionWorkflow, traceQuery } from './completion.workflow.ts';
export { creditRenewalsWorkflow } from './credit-renewals.workflow.ts';
export { creditHoldsSweep } from './credit-holds-sweep.workflow.ts';
export { chatTurn } from './chat-turn.workflow.ts';
export { embedTexts } from './embedding.workflow.ts';
export { messengerMessage } from './messenger-message.workflow.ts';
export { a2aTask } from './a2a-task.workflow.ts';
export { teamBroadcast } from './team-broadcast.workflow.ts';
export { scheduledRun } from './scheduled-run.workflow.ts';
export { webhookRun } from './webhook-run.workflow.ts';
export { mediaJob } from './media.workflow.ts';
export { mediaMusic, mediaVideo } from './media-async.workflow.ts';
export { mediaFilesSweep } from './media-sweep.workflow.ts';
export { tableImport } from './table-import.workflow.ts';
export { ragIndex } from './rag-index.workflow.ts';
export { batchRun } from './batch.workflow.ts';
