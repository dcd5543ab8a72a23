/** Request shapes of the RAG routes (api/agents/routes/rag/routes.ts). */
import { z } from 'zod';
import { fileIdPattern } from '../uploads/schema.ts';

/** `{file_id}` or `{text, title}`; `language` is an image's (OCR: en or ja). */
export const indexBodySchema = z
  .object({
    file_id: z.string().regex(fileIdPattern, 'must be a file id (file_…)').optional(),
    text: z.string().trim().min(1).max(1_000_000).optional(),
    title: z.string().trim().min(1).max(200).optional(),
    language: z.enum(['en', 'ja']).default('en'),
  })
  .strict()
  .superRefine((body, context) => {
    if (!body.file_id === !body.text) {
      context.addIssue({ code: 'custom', path: ['file_id'], message: 'send either file_id or text (with a title)' });
    }
    if (body.text && !body.title)
      context.addIssue({ code: 'custom', path: ['title'], message: 'a text needs a title' });
  });

export const indexIdPattern = /^idx_[A-Za-z0-9_-]{16}$/;

export const searchQuerySchema = z
  .object({
    q: z.string().trim().min(1, 'must not be empty').max(2_000),
    k: z.coerce.number().int().min(1).max(50).default(10),
    file_id: z.string().regex(fileIdPattern, 'must be a file id (file_…)').optional(),
  })
  .loose();
