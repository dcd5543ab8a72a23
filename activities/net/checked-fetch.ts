/**
 * A `fetch` for A2A traffic to a URL a user or a remote agent card supplied (push-notification callbacks, the
 * delegation client's JSON-RPC and SSE calls). The URL guard (url-guard.ts) serves GETs with a buffered body; A2A
 * needs POSTs and streamed answers, so this checks each request's host by the guard's own address rules
 * (`nonPublicRange`: every resolved address must be public, hosts in `allowedHosts` excepted), refuses redirects
 * (an A2A endpoint has no business redirecting a POST), then hands the request to the platform's fetch. The host is
 * resolved again by that fetch: a DNS answer that changes between the check and the connection is the gap this
 * leaves, narrower than no check and documented in docs/teams-and-a2a.md ("Agent service: agent-to-agent (A2A)").
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { nonPublicRange, UrlRefusedError } from './url-guard.ts';

/** Throws `UrlRefusedError` unless the URL is http(s), has no credentials, and reaches public addresses only. */
export async function assertPublicUrl(input: string | URL, allowedHosts: string[]): Promise<URL> {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new UrlRefusedError(`Not a URL: ${String(input).slice(0, 200)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UrlRefusedError(`Only http and https URLs are allowed, not ${url.protocol}`);
  }
  if (url.username || url.password) throw new UrlRefusedError('URLs with credentials are not allowed');
  if (allowedHosts.includes(url.host)) return url;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((answer) => answer.address);
  for (const address of addresses) {
    const range = nonPublicRange(address);
    if (range) throw new UrlRefusedError(`${url.host} resolves to a non-public address (${range}): refused`);
  }
  return url;
}

/** A `fetch` whose every request passes `assertPublicUrl` first and never follows a redirect. */
export function checkedFetch(allowedHosts: string[]): typeof fetch {
  return async (input, init) => {
    const target = input instanceof Request ? input.url : input;
    await assertPublicUrl(target, allowedHosts);
    return fetch(input, { ...init, redirect: 'manual' });
  };
}
