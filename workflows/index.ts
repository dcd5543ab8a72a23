/** Every workflow the worker registers. */
export { completionWorkflow, traceQuery } from './completion.workflow.ts';
