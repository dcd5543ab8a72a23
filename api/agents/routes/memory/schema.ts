/** Memory request bodies and queries (spec 4.4), strict. */
import { z } from 'zod';
import { MEMORY_MAX_CHARS } from '../../../../activities/memory/memory-store.ts';

/** `POST /memory/add`: importance 0..1, default 0.5. */
export const addMemorySchema = z
  .object({
    content: z.string().trim().min(1).max(MEMORY_MAX_CHARS),
    importance: z.number().min(0).max(1).default(0.5),
  })
  .strict();

const limit = (fallback: number) => z.coerce.number().int().min(1).max(500).default(fallback);

export const listMemoriesQuery = z.object({ limit: limit(100) }).strict();

export const searchMemoriesQuery = z
  .object({
    q: z
      .string({ error: 'q is required: GET /memory/search?q=<keywords>' })
      .trim()
      .min(1, 'q must not be empty')
      .max(1000),
    limit: limit(20),
  })
  .strict();
