/**
 * The one guard for every fetch of a URL a user or a model supplied (web_fetch, image_url, A2A cards, callbacks):
 * a GET (or, for callbacks, a POST with a body) that can only reach the public internet, with limits on size, time
 * and redirects.
 *
 * Rules, checked at every hop (the first URL and each redirect, which is followed by hand):
 * - http: and https: only, and no credentials in the URL. Any port is allowed: a port says nothing about whether
 *   the host is public, and the address rules below are what keep internal services out.
 * - The host is resolved once and refused if ANY answer is not a public address (`nonPublicRange`): loopback,
 *   private, link-local (169.254.169.254 and the other cloud metadata addresses), unique-local (fd00:ec2::254),
 *   carrier-grade NAT, multicast, broadcast, reserved, unspecified; IPv4-mapped IPv6 is judged by its IPv4 address;
 *   6to4, Teredo and NAT64 are refused outright (they tunnel to an embedded IPv4 the guard would otherwise have to
 *   decode), and so is any IPv6 address outside global unicast (2000::/3).
 * - The connection goes to those checked answers and nowhere else (the socket's lookup returns them, so nothing
 *   resolves the name again), and the address actually connected is checked once more before the request is
 *   written: a DNS answer that changes between the check and the connection (rebinding) cannot slip through.
 * - Hosts in `allowedHosts` skip the address rules (tests and benches point them at loopback): an entry is matched
 *   against the URL's `host` exactly, so `localhost:8080` allows that port only and a bare `localhost` only the
 *   scheme's default port. The scheme, credential and limit rules still apply to them.
 *
 * Limits: one deadline for the whole exchange, redirects included; the content type is checked before the body is
 * read (for 2xx answers; others come back with their body for the caller to report); the body is read as a stream
 * and the connection dropped as soon as it passes `maxBytes` (counted after decompression, so a compressed bomb
 * stops at the cap too). Every failure is a `FetchGuardError` subclass whose message is fit to show a model.
 */
import { lookup as systemLookup } from 'node:dns/promises';
import { request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { connect as connectTcp, isIP, type LookupFunction, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import ipaddr from 'ipaddr.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all its addresses (the system resolver by default; tests inject their own). */
export type HostLookup = (hostname: string) => Promise<ResolvedAddress[]>;

export interface GuardedFetchOptions {
  /** Largest body accepted, in bytes after decompression. Default 5 MiB. */
  maxBytes?: number;
  /** Deadline for the whole exchange, redirects included. Default 20 s. */
  timeoutMs?: number;
  /** Redirects followed at most. Default 5. */
  maxRedirects?: number;
  /** Media types accepted for a 2xx answer, matched as prefixes (`text/` accepts every text type). Default: any. */
  allowedContentTypes?: string[];
  /** `host:port` or `host` entries exempt from the address rules (see the file comment). */
  allowedHosts?: string[];
  /** Aborts the fetch; the fetch then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Request headers to add (Host, Connection and Accept-Encoding are the guard's). */
  headers?: Record<string, string>;
  /**
   * `POST` sends `body` (media job callbacks). A POST is never redirected: any 3xx answer is refused as a redirect
   * (TooManyRedirectsError), since re-sending a signed body to another host is not what its sender signed up for.
   */
  method?: 'GET' | 'POST';
  body?: string | Buffer;
  lookup?: HostLookup;
}

export interface GuardedResponse {
  status: number;
  /** The URL that answered, after redirects. */
  url: string;
  headers: IncomingHttpHeaders;
  /** The media type, lower case and without parameters (`''` when the answer had none). */
  contentType: string;
  /** The `charset` parameter of the content type, when there is one. */
  charset?: string;
  body: Buffer;
}

/** Why a guarded fetch failed; the message is written for the model (or the user) to read. */
export class FetchGuardError extends Error {
  /** True when trying again later may succeed (a timeout, a network failure). */
  readonly retryable: boolean;

  constructor(message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.retryable = options.retryable ?? false;
  }
}

/** The URL may not be fetched: a scheme, credentials or an address the rules refuse. */
export class UrlRefusedError extends FetchGuardError {
  override readonly name = 'UrlRefusedError';
}

export class TooManyRedirectsError extends FetchGuardError {
  override readonly name = 'TooManyRedirectsError';
}

export class ResponseTooLargeError extends FetchGuardError {
  override readonly name = 'ResponseTooLargeError';
}

export class ContentTypeRefusedError extends FetchGuardError {
  override readonly name = 'ContentTypeRefusedError';
}

export class FetchTimeoutError extends FetchGuardError {
  override readonly name = 'FetchTimeoutError';
}

/** The host could not be resolved or reached, or the connection broke. */
export class FetchNetworkError extends FetchGuardError {
  override readonly name = 'FetchNetworkError';
}

const defaults = { maxBytes: 5 * 1024 * 1024, timeoutMs: 20_000, maxRedirects: 5 };

interface Limits {
  maxBytes: number;
  timeoutMs: number;
  maxRedirects: number;
  allowedContentTypes?: string[];
}

const redirectStatuses = new Set([301, 302, 303, 307, 308]);
/** Network failures worth another try; a certificate or protocol error is not. */
const transientErrors = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
const globalUnicast = ipaddr.parseCIDR('2000::/3');
/** Named for a clearer message; both are already refused by their ranges (link-local, unique-local). */
const metadataAddresses = new Set(['169.254.169.254', ipaddr.parse('fd00:ec2::254').toNormalizedString()]);

/**
 * Why an IP address is not public (its ipaddr.js range, or a plainer name), or undefined when it is a public
 * unicast address a fetch may reach.
 */
export function nonPublicRange(address: string): string | undefined {
  // ipaddr.js reads any IPv6 ending in a dotted quad as IPv4-mapped (`::127.0.0.1` too): spell the quad in hex.
  const spelled = address.includes(':') ? address.replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, dottedToHex) : address;
  if (!ipaddr.isValid(spelled)) return 'not an IP address';
  let parsed = ipaddr.parse(spelled);
  if (parsed instanceof ipaddr.IPv6 && parsed.isIPv4MappedAddress()) parsed = parsed.toIPv4Address();
  if (metadataAddresses.has(parsed.toNormalizedString())) return 'cloud metadata';
  const range = parsed.range();
  if (range !== 'unicast') return range;
  if (parsed instanceof ipaddr.IPv6 && !parsed.match(globalUnicast)) return 'not global unicast';
  return undefined;
}

function dottedToHex(quad: string, ...groups: string[]): string {
  const [a, b, c, d] = groups.slice(0, 4).map(Number) as [number, number, number, number];
  if ([a, b, c, d].some((octet) => octet > 255)) return quad; // left invalid, for ipaddr.js to reject
  return `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

/** Fetches a URL with GET (or POST) under the guard's rules and limits (see the file comment). */
export async function guardedFetch(input: string | URL, options: GuardedFetchOptions = {}): Promise<GuardedResponse> {
  const limits: Limits = {
    maxBytes: options.maxBytes ?? defaults.maxBytes,
    timeoutMs: options.timeoutMs ?? defaults.timeoutMs,
    maxRedirects: options.method === 'POST' ? 0 : (options.maxRedirects ?? defaults.maxRedirects),
    allowedContentTypes: options.allowedContentTypes?.map((type) => type.toLowerCase()),
  };
  const deadline = AbortSignal.timeout(limits.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  const start = checkedUrl(String(input));
  let url = start;
  let from: URL | undefined;
  try {
    for (let redirects = 0; ; redirects += 1) {
      const response = await requestOnce(url, from, options, signal);
      const location = response.headers.location;
      if (!redirectStatuses.has(response.statusCode ?? 0) || location === undefined) {
        return await readResponse(url, response, limits);
      }
      response.destroy();
      if (redirects >= limits.maxRedirects) {
        throw new TooManyRedirectsError(`${start.href} redirected more than ${limits.maxRedirects} times`);
      }
      from = url;
      url = checkedUrl(location, from);
    }
  } catch (error) {
    if (error instanceof FetchGuardError) throw error;
    if (options.signal?.aborted) throw options.signal.reason;
    if (deadline.aborted) {
      throw new FetchTimeoutError(`${url.href} did not answer within ${limits.timeoutMs / 1000} s`, {
        retryable: true,
        cause: error,
      });
    }
    const { code, message } = (error ?? {}) as Partial<NodeJS.ErrnoException>;
    // An AggregateError (every address failed) has no message of its own, only a code.
    const reason = message || code || String(error);
    throw new FetchNetworkError(`could not fetch ${url.href}: ${reason}`, {
      retryable: code !== undefined && transientErrors.has(code),
      cause: error,
    });
  }
}

/** Parses a URL (relative to the previous hop for a redirect) and applies the scheme and credential rules. */
function checkedUrl(text: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(text, base);
  } catch {
    throw new UrlRefusedError(`${base ? 'the redirect target' : 'the URL'} "${text}" is not a valid URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UrlRefusedError(`${refused(url, base)}: only http and https URLs may be fetched`);
  }
  if (url.username !== '' || url.password !== '') {
    // Named without them: the message goes to a model and to logs.
    const shown = new URL(url);
    shown.username = '';
    shown.password = '';
    throw new UrlRefusedError(`${refused(shown, base)}: URLs with credentials may not be fetched`);
  }
  return url;
}

/** "refused <url>", and where a redirect came from. */
function refused(url: URL, from: URL | undefined): string {
  return `refused ${url.href}${from ? ` (redirected from ${from.href})` : ''}`;
}

function isAllowedHost(url: URL, allowedHosts: string[]): boolean {
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return allowedHosts.some((entry) => {
    const host = entry.trim().toLowerCase();
    return host === url.host || host === `${url.hostname}:${port}`;
  });
}

/** Resolves and checks the host, connects to a checked address, and sends the request; resolves with the answer's head. */
async function requestOnce(
  url: URL,
  from: URL | undefined,
  options: GuardedFetchOptions,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const allowed = isAllowedHost(url, options.allowedHosts ?? []);
  const addresses = await resolve(hostname, options.lookup ?? lookupAll, signal);
  if (!allowed) {
    for (const { address } of addresses) {
      const subject = hostname === address ? address : `${hostname} resolves to ${address}, which`;
      refuseNonPublic(url, from, address, subject);
    }
  }
  const socket = await connect(url, from, hostname, addresses, allowed, signal);
  return new Promise((resolve, reject) => {
    const fail = (error: unknown) => {
      socket.destroy();
      reject(error);
    };
    let outgoing: ReturnType<typeof request>;
    const body = options.method === 'POST' ? (options.body ?? '') : undefined;
    try {
      outgoing = request({
        createConnection: () => socket,
        path: `${url.pathname}${url.search}`,
        method: options.method ?? 'GET',
        signal,
        headers: {
          ...options.headers,
          ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }),
          host: url.host,
          'accept-encoding': 'gzip, deflate, br',
          connection: 'close',
        },
      });
    } catch (error) {
      // A header the caller passed that HTTP does not allow.
      return fail(error);
    }
    outgoing.once('response', resolve);
    // Kept for the request's life: an abort while the body is read errors the request again.
    outgoing.on('error', fail);
    outgoing.end(body);
  });
}

async function lookupAll(hostname: string): Promise<ResolvedAddress[]> {
  const answers = await systemLookup(hostname, { all: true, order: 'verbatim' });
  return answers.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
}

async function resolve(hostname: string, lookup: HostLookup, signal: AbortSignal): Promise<ResolvedAddress[]> {
  const family = isIP(hostname);
  if (family !== 0) return [{ address: hostname, family: family === 6 ? 6 : 4 }];
  let addresses: ResolvedAddress[];
  try {
    addresses = await abortable(lookup(hostname), signal);
  } catch (error) {
    if (signal.aborted) throw error;
    const { code } = (error ?? {}) as Partial<NodeJS.ErrnoException>;
    throw new FetchNetworkError(`could not resolve ${hostname}${code ? ` (${code})` : ''}`, {
      retryable: code !== undefined && transientErrors.has(code),
      cause: error,
    });
  }
  if (addresses.length === 0) throw new FetchNetworkError(`${hostname} has no address`);
  return addresses;
}

/** Throws unless `address` is public; `subject` names it in the message ("evil.test resolves to 10.0.0.5, which"). */
function refuseNonPublic(url: URL, from: URL | undefined, address: string, subject: string): void {
  const range = nonPublicRange(address);
  if (range === undefined) return;
  throw new UrlRefusedError(
    `${refused(url, from)}: ${subject} is not a public address (${range}); only public internet addresses may be fetched`,
  );
}

/**
 * Opens the connection for one hop: TCP to one of the checked addresses (Node's happy eyeballs picks among them;
 * the lookup it calls answers with exactly those), then the connected address checked again, then TLS for https.
 */
async function connect(
  url: URL,
  from: URL | undefined,
  hostname: string,
  addresses: ResolvedAddress[],
  allowed: boolean,
  signal: AbortSignal,
): Promise<Socket> {
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if (options.all) callback(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  };
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const tcp = connectTcp({ host: hostname, port, lookup: pinned, autoSelectFamily: true });
  await settled(tcp, 'connect', signal);
  if (!allowed) {
    try {
      const remote = tcp.remoteAddress ?? '';
      refuseNonPublic(url, from, remote, `the connection reached ${remote}, which`);
    } catch (error) {
      tcp.destroy();
      throw error;
    }
  }
  if (url.protocol === 'http:') return tcp;
  // The certificate is checked against the URL's host name (SNI carries names only, never an IP address).
  const tls = connectTls({ socket: tcp, host: hostname, servername: isIP(hostname) === 0 ? hostname : undefined });
  await settled(tls, 'secureConnect', signal);
  return tls;
}

/** Waits for a socket to reach `event`; destroys it when it fails or the signal aborts first. */
function settled(socket: Socket, event: 'connect' | 'secureConnect', signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const finish = (error?: unknown) => {
      socket.off(event, onReady);
      socket.off('error', finish);
      signal.removeEventListener('abort', onAbort);
      if (error === undefined) return resolve();
      socket.destroy();
      reject(error);
    };
    const onReady = () => finish();
    const onAbort = () => finish(signal.reason);
    if (signal.aborted) return onAbort();
    socket.once(event, onReady);
    socket.once('error', finish);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Checks the content type and the declared length, then reads the body up to the byte cap. */
async function readResponse(url: URL, response: IncomingMessage, limits: Limits): Promise<GuardedResponse> {
  const status = response.statusCode ?? 0;
  const [mediaType = '', ...parameters] = (response.headers['content-type'] ?? '').split(';');
  const contentType = mediaType.trim().toLowerCase();
  const charset = parameters
    .map((parameter) => /^\s*charset\s*=\s*"?([^";\s]+)"?\s*$/i.exec(parameter)?.[1])
    .find((value) => value !== undefined);
  const accepted = limits.allowedContentTypes;
  if (status >= 200 && status < 300 && accepted && !accepted.some((prefix) => contentType.startsWith(prefix))) {
    response.destroy();
    throw new ContentTypeRefusedError(
      `${url.href} is ${contentType === '' ? 'of no declared type' : contentType}, not one of the types accepted ` +
        `(${accepted.join(', ')})`,
    );
  }
  const declared = Number(response.headers['content-length']);
  if (declared > limits.maxBytes) {
    response.destroy();
    throw tooLarge(url, limits.maxBytes);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of decoded(response)) {
    size += (chunk as Buffer).length;
    if (size > limits.maxBytes) {
      response.destroy();
      throw tooLarge(url, limits.maxBytes);
    }
    chunks.push(chunk as Buffer);
  }
  return { status, url: url.href, headers: response.headers, contentType, charset, body: Buffer.concat(chunks) };
}

function tooLarge(url: URL, maxBytes: number): ResponseTooLargeError {
  return new ResponseTooLargeError(`${url.href} is larger than the ${formatBytes(maxBytes)} a fetch may read`);
}

function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${+(bytes / (1024 * 1024)).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${+(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} bytes`;
}

/** The body as sent, or decompressed when the server used one of the encodings the request offered. */
function decoded(response: IncomingMessage): Readable {
  const encoding = String(response.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? createGunzip()
      : encoding === 'deflate'
        ? createInflate()
        : encoding === 'br'
          ? createBrotliDecompress()
          : undefined;
  if (decoder === undefined) {
    if (encoding === '' || encoding === 'identity') return response;
    response.destroy();
    throw new FetchNetworkError(`the answer is in an encoding the fetch did not ask for (${encoding})`);
  }
  response.on('error', (error) => decoder.destroy(error));
  decoder.on('close', () => response.destroy());
  return response.pipe(decoder);
}
