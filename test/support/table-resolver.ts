import type { LookupAddress } from 'node:dns';
import type { HostResolver } from '../../shared/http';

/**
 * DNS answered from a table the test changes (names it lacks do not resolve); records every
 * name asked. The machine has no network: tests that need a name to resolve, to a public or a
 * loopback address, inject this instead of the system resolver.
 */
export function tableResolver(table: Record<string, string[]>): HostResolver & { asked: string[] } {
  const asked: string[] = [];
  const resolve = async (hostname: string): Promise<LookupAddress[]> => {
    asked.push(hostname);
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolve, { asked });
}

/** The public names the agent tests give their HTTP tools. */
export const ACME_DNS: Record<string, string[]> = { 'api.acme.com': ['93.184.216.34'], 'x.acme.com': ['93.184.216.34'] };
