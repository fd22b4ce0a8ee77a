import { promises as dnsPromises, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Which URLs Deskhand may send webhooks and HTTP-tool calls to (spec: Delivery and retries,
 * item 5): https, and only to public addresses. The same rules run when a URL is registered
 * ({@link checkUrlForRegistration}) and again at every request (`safe-post.ts`), where the
 * addresses are checked at connection time.
 */

/**
 * Resolves a host name to every address it has (A and AAAA), like
 * `dns.promises.lookup(host, { all: true })`. Injected so tests and callers control DNS.
 */
export type HostResolver = (hostname: string) => Promise<readonly LookupAddress[]>;

/** The system resolver (getaddrinfo), every answer, in the resolver's order. */
export const systemResolver: HostResolver = (hostname) =>
  dnsPromises.lookup(hostname, { all: true, verbatim: true });

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

export interface UrlPolicyOptions {
  /**
   * Development only (`DESKHAND_ALLOW_PRIVATE_URLS=1`): allow plain http, local names and
   * private addresses. The caller decides; this module never reads the environment.
   */
  allowPrivate: boolean;
}

export interface RegistrationCheckOptions extends UrlPolicyOptions {
  /** Name resolution; defaults to {@link systemResolver}. */
  resolve?: HostResolver;
  /** Give up resolving after this long (getaddrinfo can hang for many seconds). Default 5000. */
  resolveTimeoutMs?: number;
}

/**
 * Names that never denote a public host: special-use and reserved TLDs (RFC 6761, 6762, 8375,
 * 9476, 2606) and suffixes that resolvers on company networks commonly answer for.
 */
const LOCAL_NAME_SUFFIXES: readonly string[] = [
  'localhost',
  'local',
  'localdomain',
  'internal',
  'intranet',
  'lan',
  'home',
  'corp',
  'private',
  'arpa', // home.arpa, in-addr.arpa, ip6.arpa
  'test',
  'invalid',
  'example',
  'onion',
  'alt',
];

/** Refuses an IPv4 unless ipaddr.js classes it as ordinary unicast. */
function isPublicIPv4(address: ipaddr.IPv4): boolean {
  // Every special-purpose block (0/8, 10/8, 100.64/10, 127/8, 169.254/16, 172.16/12,
  // 192.0.0/24, 192.0.2/24, 192.88.99/24, 192.168/16, 198.18/15, 198.51.100/24, 203.0.113/24,
  // 224/4, 240/4, 255.255.255.255, AS112, AMT) has a range name other than 'unicast'.
  return address.range() === 'unicast';
}

function ipv4FromParts(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

const NAT64_WELL_KNOWN = ipaddr.IPv6.parse('64:ff9b::');
const SIX_TO_FOUR = ipaddr.IPv6.parse('2002::');
const TEREDO = ipaddr.IPv6.parse('2001::');
const GLOBAL_UNICAST = ipaddr.IPv6.parse('2000::');

/**
 * IPv6 is public only inside global unicast (2000::/3) and outside every special block. The
 * forms that carry an IPv4 are judged by that IPv4: IPv4-mapped (::ffff:a.b.c.d), NAT64
 * (64:ff9b::/96), 6to4 (2002::/16) and Teredo (2001::/32, server and client). Deprecated
 * IPv4-compatible (::a.b.c.d), SIIT (::ffff:0:a.b.c.d) and local-use NAT64 (64:ff9b:1::/48)
 * fall outside 2000::/3 and are refused whatever they embed.
 */
function isPublicIPv6(address: ipaddr.IPv6): boolean {
  if (address.zoneId !== undefined) return false; // scoped addresses are link-local by nature
  const p = address.parts;
  if (address.isIPv4MappedAddress()) return isPublicIPv4(address.toIPv4Address());
  if (address.match(NAT64_WELL_KNOWN, 96)) return isPublicIPv4(ipv4FromParts(p[6], p[7]));
  if (!address.match(GLOBAL_UNICAST, 3)) return false;
  if (address.match(SIX_TO_FOUR, 16)) return isPublicIPv4(ipv4FromParts(p[1], p[2]));
  if (address.match(TEREDO, 32)) {
    // The client address is stored inverted (RFC 4380, section 4).
    return isPublicIPv4(ipv4FromParts(p[2], p[3])) && isPublicIPv4(ipv4FromParts(~p[6] & 0xffff, ~p[7] & 0xffff));
  }
  return address.range() === 'unicast';
}

/**
 * Parses an address the way the socket layer will read it. `net.isIP` is the gate (RFC
 * syntax only: no octal, hex or short IPv4 forms, which never come from DNS or the URL
 * parser). A dotted IPv4 tail in IPv6 is turned into hex first, because ipaddr.js reads
 * `::a.b.c.d` as `::ffff:a.b.c.d`, while sockets treat it as IPv4-compatible `::a.b.c.d`.
 */
function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const kind = isIP(text);
  if (kind === 4) return ipaddr.IPv4.parse(text);
  if (kind !== 6) return null;
  const zoneAt = text.indexOf('%');
  const zone = zoneAt === -1 ? '' : text.slice(zoneAt);
  let bare = zoneAt === -1 ? text : text.slice(0, zoneAt);
  if (bare.includes('.')) {
    const tailAt = bare.lastIndexOf(':') + 1;
    const [a, b, c, d] = bare.slice(tailAt).split('.').map(Number);
    bare = `${bare.slice(0, tailAt)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  return ipaddr.IPv6.parse(`${bare}${zone}`);
}

/**
 * Whether an IP address may be connected to: true only for ordinary public unicast.
 *
 * Refused: private (RFC 1918), loopback, link-local, unique-local, site-local, multicast,
 * unspecified, broadcast, carrier-grade NAT (100.64/10), benchmarking (198.18/15, 2001:2::/48),
 * documentation (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20), reserved
 * (240/4, 2001::/23 ...), 0.0.0.0/8, scoped IPv6 (`%zone`), IPv6 outside 2000::/3, and the
 * IPv6 forms that embed a refused IPv4. Text that is not an address in standard notation
 * (including `2130706433` or `0x7f.1`, which only URL parsers expand) is refused too.
 *
 * @param ip - an address as text; IPv6 may be given with or without brackets
 */
export function isPublicAddress(ip: string): boolean {
  const text = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const address = parseAddress(text);
  if (address === null) return false;
  return address.kind() === 'ipv4'
    ? isPublicIPv4(address as ipaddr.IPv4)
    : isPublicIPv6(address as ipaddr.IPv6);
}

/** The URL's host without IPv6 brackets, without trailing dots, as the WHATWG parser left it. */
function hostOf(url: URL): string {
  const host = url.hostname;
  if (host.startsWith('[')) return host.slice(1, -1);
  return host.replace(/\.+$/, '');
}

/** True when the host is an IP literal (after the WHATWG parser's normalisation). */
function isIpLiteral(host: string): boolean {
  // WHATWG turns every IPv4 spelling (2130706433, 0x7f.1, 0177.0.0.1, 127.1) into dotted
  // decimal and rejects the URL when a numeric-looking host is not a valid IPv4, so a strict
  // test suffices here.
  return isIP(host) !== 0;
}

function isLocalName(host: string): boolean {
  // Single-label names are completed by the resolver's search domains (`http://metadata/`),
  // so they name whatever the local network says they do.
  if (!host.includes('.')) return true;
  const lower = host.toLowerCase();
  return LOCAL_NAME_SUFFIXES.some((suffix) => lower === suffix || lower.endsWith(`.${suffix}`));
}

/**
 * The checks that need no DNS: scheme, credentials, local names and literal addresses.
 * Shared by registration and by every request.
 */
export function checkUrlShape(rawUrl: string | URL, options: UrlPolicyOptions): UrlCheck {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return { ok: false, reason: 'the URL is not a valid absolute URL' };
  }
  if (url.protocol !== 'https:' && !(options.allowPrivate && url.protocol === 'http:')) {
    return { ok: false, reason: options.allowPrivate ? 'the URL must use http or https' : 'the URL must use https' };
  }
  if (url.username !== '' || url.password !== '') {
    return { ok: false, reason: 'the URL must not contain a user name or password' };
  }
  const host = hostOf(url);
  if (host === '') return { ok: false, reason: 'the URL has no host' };
  if (options.allowPrivate) return { ok: true, url };
  if (isIpLiteral(host)) {
    return isPublicAddress(host)
      ? { ok: true, url }
      : { ok: false, reason: 'the host is a private, local or reserved address' };
  }
  if (isLocalName(host)) {
    return { ok: false, reason: 'the host is a local or internal name' };
  }
  return { ok: true, url };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`name resolution took longer than ${ms} ms`)), ms);
    promise.then(
      (value) => { clearTimeout(timer); resolve(value); },
      (err: unknown) => { clearTimeout(timer); reject(err); },
    );
  });
}

/**
 * Checks a webhook or HTTP-tool URL before it is stored.
 *
 * Requires https (http only with `allowPrivate`), no credentials, a host that is not a local
 * name (`localhost`, `*.local`, `*.internal`, single labels, ...) and not a non-public literal
 * address in any spelling the URL parser accepts; then resolves the name and refuses it if ANY
 * answer is non-public, or if it does not resolve. With `allowPrivate` only the scheme and
 * credentials are checked and nothing is resolved.
 *
 * Reasons are written for the API client and never contain resolved addresses.
 */
export async function checkUrlForRegistration(rawUrl: string, options: RegistrationCheckOptions): Promise<UrlCheck> {
  const shape = checkUrlShape(rawUrl, options);
  if (!shape.ok || options.allowPrivate) return shape;
  const host = hostOf(shape.url);
  if (isIpLiteral(host)) return shape;

  const resolve = options.resolve ?? systemResolver;
  let answers: readonly LookupAddress[];
  try {
    answers = await withTimeout(resolve(host), options.resolveTimeoutMs ?? 5000);
  } catch {
    return { ok: false, reason: 'the host name does not resolve' };
  }
  if (answers.length === 0) return { ok: false, reason: 'the host name does not resolve' };
  if (!answers.every((answer) => isPublicAddress(answer.address))) {
    return { ok: false, reason: 'the host name resolves to a private, local or reserved address' };
  }
  return shape;
}
