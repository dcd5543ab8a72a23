/**
 * `TRUSTED_PROXIES` (docs/operations.md, "Behind a reverse proxy"): whose forwarded headers are believed
 * (api/forwarding.ts).
 */
import proxyAddress from 'proxy-addr';

/** Addresses and ranges to trust (proxy-addr's syntax), or a number of hops whatever their address. */
export type TrustedProxies = { addresses: string[] } | { hops: number };

/** Reads the setting; throws on an entry proxy-addr cannot read. */
export function parseTrustedProxies(value: string): TrustedProxies {
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return { hops: Number(trimmed) };
  const addresses = trimmed
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  proxyAddress.compile(addresses);
  return { addresses };
}
