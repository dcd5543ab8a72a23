/**
 * People API v1, enough for contacts_search (`/google/v1/people…`):
 * - `GET people:searchContacts?query&readMask&pageSize`: contacts with a name word, an e-mail address, a phone
 *   number (digits) or an organisation starting with the query (Google's prefix match), only the `readMask` fields;
 *   an empty query answers no results (Google's cache warm-up request); no `readMask` is 400.
 * - `GET people/me/connections?personFields&pageSize`: every contact.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../../transport.ts';
import type { Account, Person } from './accounts.ts';
import { badRequest, notFound } from './http.ts';

const maskable = ['names', 'emailAddresses', 'phoneNumbers', 'organizations'] as const;

export function people(request: IncomingMessage, response: ServerResponse, account: Account, path: string, url: URL) {
  if (request.method !== 'GET') return notFound(response);
  const parameters = url.searchParams;
  const pageSize = Math.min(Math.max(Number(parameters.get('pageSize') ?? 10) || 10, 1), 30);
  if (path === '/people:searchContacts') {
    const mask = parameters.get('readMask');
    if (!mask) return badRequest(response, 'Request must set the readMask');
    const query = (parameters.get('query') ?? '').trim().toLowerCase();
    const found = query ? account.people.filter((person) => matches(person, query)).slice(0, pageSize) : [];
    return sendJson(
      response,
      200,
      found.length ? { results: found.map((person) => ({ person: masked(person, mask) })) } : {},
    );
  }
  if (path === '/people/me/connections') {
    const mask = parameters.get('personFields');
    if (!mask) return badRequest(response, 'personFields mask is required');
    const all = account.people.map((person) => masked(person, mask));
    return sendJson(response, 200, {
      connections: all.slice(0, Math.max(pageSize, 100)),
      totalPeople: all.length,
      totalItems: all.length,
    });
  }
  return notFound(response);
}

function matches(person: Person, query: string): boolean {
  const words = [
    ...person.names.flatMap((name) => name.displayName.toLowerCase().split(/\s+/)),
    ...person.emailAddresses.map((email) => email.value.toLowerCase()),
    ...person.organizations.flatMap((organization) => organization.name.toLowerCase().split(/\s+/)),
  ];
  if (words.some((word) => word.startsWith(query))) return true;
  if (person.names.some((name) => name.displayName.toLowerCase().startsWith(query))) return true;
  const digits = query.replace(/\D/g, '');
  return digits.length >= 3 && person.phoneNumbers.some((phone) => phone.value.replace(/\D/g, '').includes(digits));
}

function masked(person: Person, mask: string) {
  const fields = mask.split(',').map((field) => field.trim());
  return {
    resourceName: person.resourceName,
    etag: `%${Buffer.from(person.resourceName).toString('base64url')}`,
    ...Object.fromEntries(
      maskable
        .filter((field) => fields.includes(field) && person[field].length > 0)
        .map((field) => [
          field,
          person[field].map((value, index) => ({ metadata: { primary: index === 0 }, ...value })),
        ]),
    ),
  };
}
