/**
 * `update_plan`: the agent's plan for a multi-step answer, as a list of steps with a status each. The agent calls it
 * with the whole plan: first to lay it out, then whenever a step starts or ends. The tool only checks and
 * acknowledges the plan; the chat turn turns the changes into `plan_created`, `plan_step` and `plan_done` events
 * (workflows/chat-turn.workflow.ts), so the client sees the plan as the agent works.
 */
import { z } from 'zod';
import { defineTool } from './tool.ts';

export const updatePlanTool = defineTool({
  name: 'update_plan',
  description:
    'Lay out or update your plan for a task that takes several steps. Send the whole plan every time: each step with ' +
    'a short title and its status (pending, in_progress or completed). Call it first to create the plan, then each ' +
    'time a step starts or is completed.',
  input: z
    .object({
      steps: z
        .array(
          z
            .object({
              title: z.string().trim().min(1).max(200),
              status: z.enum(['pending', 'in_progress', 'completed']),
            })
            .strict(),
        )
        .min(1)
        .max(20),
    })
    .strict(),
  timeoutMs: 1_000,
  retry: { maximumAttempts: 1, initialIntervalMs: 0 },
  maxOutputChars: 500,
  agentsOnly: true,
  configured: () => true,
  async run({ steps }) {
    const done = steps.filter((step) => step.status === 'completed').length;
    return `Plan updated: ${steps.length} steps, ${done} completed.`;
  },
});
