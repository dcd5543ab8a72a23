/** Every workflow the worker registers. */
export { completionWorkflow, traceQuery } from './completion.workflow.ts';
export { creditRenewalsWorkflow } from './credit-renewals.workflow.ts';
