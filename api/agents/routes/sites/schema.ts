/** Site publishing request bodies (spec 4.6), strict. The html's byte limit (SITE_MAX_BYTES) is the store's. */
import { z } from 'zod';
import { SITE_TITLE_MAX_CHARS, subdomainProblem } from '../../../../activities/sites/site-store.ts';

export const subdomainSchema = z
  .string({ error: 'subdomain must be a string' })
  .trim()
  .toLowerCase()
  .superRefine((value, context) => {
    const problem = subdomainProblem(value);
    if (problem) context.addIssue({ code: 'custom', message: problem });
  });

const title = z.string({ error: 'title must be a string' }).trim().min(1).max(SITE_TITLE_MAX_CHARS);
const html = z.string({ error: 'html must be a string (a whole HTML document)' }).min(1, 'html must not be empty');

/** `POST /deploy/site` */
export const publishSiteSchema = z.object({ html, subdomain: subdomainSchema, title }).strict();

/** `PUT /deploy/site/{subdomain}`: the html, the title, or both. */
export const updateSiteSchema = z
  .object({ html: html.optional(), title: title.optional() })
  .strict()
  .refine((body) => body.html !== undefined || body.title !== undefined, 'send html, title or both');
