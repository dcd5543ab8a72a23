/**
 * `contacts_search`: people in the user's Google Contacts whose name, e-mail, phone or organisation matches
 * (`people.searchContacts`, after the empty warm-up request Google asks clients to send so its search cache is
 * current). A read: runs at once.
 */
import { z } from 'zod';
import { defineTool } from '../tool.ts';
import { workspaceOf, workspaceTool } from './workspace-tool.ts';

const readMask = 'names,emailAddresses,phoneNumbers,organizations';

interface Person {
  resourceName: string;
  names?: Array<{ displayName?: string }>;
  emailAddresses?: Array<{ value?: string; type?: string }>;
  phoneNumbers?: Array<{ value?: string; type?: string }>;
  organizations?: Array<{ name?: string; title?: string }>;
}

export const contactsSearchTool = defineTool({
  name: 'contacts_search',
  description:
    'Search the user’s Google Contacts by name, e-mail address, phone number or organisation (prefix match, as ' +
    'Google does). Answers each contact’s name, e-mail addresses, phone numbers and organisation.',
  input: z
    .object({
      query: z.string().trim().min(1).max(200).describe('A name, address, number or organisation, or its beginning'),
      max_results: z.number().int().min(1).max(30).optional().describe('Contacts at most (default 10)'),
    })
    .strict(),
  timeoutMs: 30_000,
  ...workspaceTool,
  maxOutputChars: 8_000,
  async run({ query, max_results = 10 }, context) {
    const { google, userId } = workspaceOf(context);
    const search = (text: string) =>
      google.request(
        userId,
        { family: 'people', path: '/people:searchContacts', query: { query: text, readMask, pageSize: max_results } },
        context.signal,
      );
    await search('');
    const answer = (await search(query)).json as { results?: Array<{ person: Person }> };
    const contacts = (answer.results ?? []).map(({ person }) => ({
      id: person.resourceName,
      name: person.names?.[0]?.displayName ?? '',
      emails: (person.emailAddresses ?? []).map((email) => email.value).filter(Boolean),
      phones: (person.phoneNumbers ?? []).map((phone) => phone.value).filter(Boolean),
      ...(person.organizations?.[0]
        ? { organization: [person.organizations[0].name, person.organizations[0].title].filter(Boolean).join(', ') }
        : {}),
    }));
    return { query, contacts, ...(contacts.length === 0 ? { note: 'no contact matches' } : {}) };
  },
});
