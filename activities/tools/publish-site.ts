/**
 * `publish_site`: publishes an HTML page on `<subdomain>.<SITE_DOMAIN>` for the user (spec 4.6), or replaces the
 * page the user already has there. Visible to anyone with the address, so every call waits for the user's approval
 * (`needsApproval`: they see the subdomain, title and html first). Agent service only (it needs an account and the
 * site store, `context.services.sites`). Published once per tool call: the store records the call (`callKey`), so a
 * retried or replayed call does not publish again.
 */
import { z } from 'zod';
import { SITE_TITLE_MAX_CHARS, subdomainProblem } from '../sites/site-store.ts';
import { defineTool, ToolError } from './tool.ts';

export const publishSiteTool = defineTool({
  name: 'publish_site',
  description:
    'Publish a complete HTML document as a public web page at its own address (https://<subdomain>.<site domain>/), ' +
    'or replace the page the user already published on that subdomain. The page is one self-contained document ' +
    '(inline CSS and JavaScript; images as data: or https: URLs); it cannot call back to this service. ' +
    'The user is asked to approve every publication. Returns the page address.',
  input: z
    .object({
      subdomain: z
        .string()
        .trim()
        .toLowerCase()
        .min(1)
        .max(63)
        .superRefine((value, context) => {
          const problem = subdomainProblem(value);
          if (problem) context.addIssue({ code: 'custom', message: problem });
        })
        .describe('One DNS label: lowercase letters, digits and hyphens, e.g. "team-offsite-2025"'),
      title: z.string().trim().min(1).max(SITE_TITLE_MAX_CHARS).describe('A short title for the user’s site list'),
      html: z.string().min(1).describe('The whole HTML document, from <!doctype html> to </html>'),
    })
    .strict(),
  timeoutMs: 15_000,
  retry: { maximumAttempts: 3, initialIntervalMs: 500 },
  maxOutputChars: 500,
  needsApproval: true,
  agentsOnly: true,
  configured: () => true,
  async run({ subdomain, title, html }, context) {
    if (!context.userId) throw new ToolError('publishing needs a signed-in user; nothing was published');
    const sites = context.services?.sites;
    if (!sites) throw new ToolError('site publishing is not available in this service');
    if (!context.callKey) throw new ToolError('this call has no idempotency key');
    try {
      const { url, created } = await sites.publish(context.userId, { subdomain, title, html }, context.callKey);
      return { published: true, url, replaced: !created };
    } catch (error) {
      // A refused name, title or html (RangeError) is the model's to fix; anything else is the database: retried.
      if (error instanceof RangeError) throw new ToolError(`${error.message}; nothing was published`);
      throw new ToolError('the site could not be published', { retryable: true, cause: error });
    }
  },
});
