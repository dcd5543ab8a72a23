/**
 * The workflow bundle stays light: every module it reaches is evaluated again for each workflow the worker runs,
 * so a library with costly module-level setup costs every completion. zod was reached once (through
 * common/plans.ts) and added about 5 ms of CPU to each completion; this keeps it out, with the other libraries
 * workflow code has no use for.
 */
import { expect, it } from '@jest/globals';
import { workflowBundle } from '../../worker/create-worker.ts';

it('keeps zod, the database and provider libraries out of the workflow bundle', async () => {
  const { code } = await workflowBundle();
  for (const library of ['zod', 'pg', '@mikro-orm', 'mathjs', 'koa', 'gpt-tokenizer']) {
    expect({ library, bundled: code.includes(`node_modules/${library}/`) }).toEqual({ library, bundled: false });
  }
}, 120_000);
