/**
 * Who the client is and how it reached us, behind reverse proxies the operator trusts, and only them.
 *
 * `X-Forwarded-For`, `-Proto` and `-Host` are claims any client can send. Koa believes them for every request when
 * `app.proxy` is on, so a caller refused by a per-IP limit passed again with a made-up `X-Forwarded-For`, and could
 * choose the host that decides a cookie's `Secure` or a login link's origin. Both apps keep `app.proxy` off, and this
 * middleware, first in each app, reads the headers only when the connection comes from a proxy named in
 * `TRUSTED_PROXIES` (config/settings.ts):
 * - the client address (`ctx.ip`): the X-Forwarded-For chain walked from the nearest hop back while each hop is a
 *   trusted proxy (proxy-addr, the implementation Express uses), so a client's own additions to the header count
 *   only as far as the trusted proxies vouch for them;
 * - the protocol and host (`ctx.protocol`, `ctx.host`, and what derives from them: `ctx.hostname`, `ctx.secure`):
 *   the first value of X-Forwarded-Proto and X-Forwarded-Host, as the proxy in front set them.
 * Otherwise the socket's address and the request's own Host are used, whatever the headers say.
 *
 * `TRUSTED_PROXIES` lists addresses and CIDR ranges (and proxy-addr's names `loopback`, `linklocal`, `uniquelocal`),
 * or is a number of hops to trust whatever their address (for a proxy whose address is not fixed; the list is the
 * safer choice). Empty (the default) trusts nobody: right for a service reached directly.
 */
import type { Middleware, Request } from 'koa';
import proxyAddress from 'proxy-addr';
import type { TrustedProxies } from '../config/trusted-proxies.ts';

export function forwardedFromTrustedProxies(trusted: TrustedProxies): Middleware {
  const trust: (address: string, hop: number) => boolean =
    'hops' in trusted ? (_address, hop) => hop < trusted.hops : proxyAddress.compile(trusted.addresses);
  const none = 'hops' in trusted ? trusted.hops === 0 : trusted.addresses.length === 0;
  return async (context, next) => {
    const peer = context.req.socket.remoteAddress;
    if (!none && peer !== undefined && trust(peer, 0)) {
      context.request.ip = proxyAddress(context.req, trust);
      const protocol = firstValue(context.get('x-forwarded-proto')).toLowerCase();
      if (protocol === 'http' || protocol === 'https') shadow(context.request, 'protocol', protocol);
      const host = firstValue(context.get('x-forwarded-host'));
      if (host) shadow(context.request, 'host', host);
    }
    await next();
  };
}

function firstValue(header: string): string {
  return header.split(',')[0]!.trim();
}

/**
 * Koa's `protocol` and `host` are getters on the request prototype that consult `app.proxy`, which is off; this
 * request's own property takes their place, so every reader (`ctx.protocol`, `ctx.hostname`, `ctx.secure`, and the
 * code built on them) sees the proxy's view, for this request only.
 */
function shadow(request: Request, name: 'protocol' | 'host', value: string): void {
  Object.defineProperty(request, name, { value, configurable: true, enumerable: true });
}
