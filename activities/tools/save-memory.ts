/**
 * `save_memory`: an agent keeps something about the user for later conversations (spec 4.4), with an importance
 * score. Agent service only: it needs an account and the process's memory store (activities/memory/memory-store.ts,
 * given as `context.services.memories`). Saving text the user already has stored updates that memory's importance
 * rather than adding a copy, so a retried call (same `callKey`) saves once.
 */
import { z } from 'zod';
import { defineTool, ToolError } from './tool.ts';

export const saveMemoryTool = defineTool({
  name: 'save_memory',
  description:
    'Saves a fact about the user to their long-term memory, so it is remembered in later conversations: ' +
    'preferences, personal details they shared, ongoing projects, how they like answers. Save one self-contained ' +
    'fact per call, written so it makes sense on its own (e.g. "The user is vegetarian"). Do not save secrets ' +
    '(passwords, keys, card numbers), passing remarks or things only relevant to this conversation.',
  input: z.object({
    content: z.string().trim().min(1).max(1_000).describe('The fact to remember, as one self-contained sentence'),
    importance: z
      .number()
      .min(0)
      .max(1)
      .describe('How much this matters for future conversations: 0.2 minor detail, 0.5 useful, 0.9 essential'),
  }),
  timeoutMs: 10_000,
  retry: { maximumAttempts: 3, initialIntervalMs: 500 },
  maxOutputChars: 1_000,
  agentsOnly: true,
  configured: () => true,
  async run({ content, importance }, context) {
    if (!context.userId) throw new ToolError('memories need a signed-in user; nothing was saved');
    const memories = context.services?.memories;
    if (!memories) throw new ToolError('memory is not available in this service; nothing was saved');
    try {
      const { id } = await memories.save(context.userId, content, importance);
      return { saved: true, memory_id: id };
    } catch (error) {
      // The store refuses text or an importance out of range (RangeError); anything else is the database: retried.
      if (error instanceof RangeError) throw new ToolError(error.message);
      throw new ToolError('the memory could not be saved', { retryable: true, cause: error });
    }
  },
});
