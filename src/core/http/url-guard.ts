import dns from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * The URL allow-list of outgoing requests to addresses users choose: webhook targets
 * (events.md §6 `validate_url`), tool sources and web pages (the reference's web-fetch
 * rules). Checked when a URL is saved or fetched and again when the connection is made: the connection uses
 * exactly the addresses that were checked, so a DNS answer that changes between
 * the check and the connection (rebinding) cannot reach a refused address.
 *
 * - scheme http or https, no credentials, no parser-confusing characters;
 * - cloud metadata hosts and addresses, link-local, unspecified and multicast
 *   addresses are always refused;
 * - loopback, private, shared and other non-global addresses are refused unless
 *   the operator allows local targets;
 * - a filter list in the reference's syntax: `!host` blocks, plain entries form an
 *   allow-list (once one exists, the host must match one).
 */
export interface UrlPolicy {
  allowLocal: boolean;
  filterList: string[];
  /** The variables that set this policy, named in refusals so the operator knows what to change. */
  variables: { allowLocal: string; filterList: string };
}

export type Resolver = (hostname: string) => Promise<{ address: string; family: number }[]>;

export const DEFAULT_FILTER_LIST = ['!169.254.169.254', '!fd00:ec2::254', '!metadata.google.internal', '!metadata.azure.com', '!100.100.100.200'];

/** A refused URL; the message says why and what allows it, in a sentence a user can act on. */
export class UrlRefusedError extends Error {}

/** Why an address is refused: local ones can be allowed by the operator, the others never. */
function addressRefusal(address: string, host: string, policy: UrlPolicy): UrlRefusedError {
  const target = host === address ? host : `${host} (${address})`;
  if (addressAllowed(address, { ...policy, allowLocal: true })) {
    return new UrlRefusedError(
      `${target} is on this machine or a private network; local targets are refused unless the server runs with ${policy.variables.allowLocal}=true.`,
    );
  }
  return new UrlRefusedError(`${target} is a link-local, cloud metadata or reserved address, which is always refused.`);
}

/** Addresses never reached, whatever the operator allows. */
const alwaysBlocked = new BlockList();
alwaysBlocked.addSubnet('0.0.0.0', 8, 'ipv4');
alwaysBlocked.addSubnet('169.254.0.0', 16, 'ipv4');
alwaysBlocked.addAddress('100.100.100.200', 'ipv4');
alwaysBlocked.addSubnet('224.0.0.0', 4, 'ipv4');
alwaysBlocked.addSubnet('240.0.0.0', 4, 'ipv4');
alwaysBlocked.addAddress('::', 'ipv6');
alwaysBlocked.addSubnet('fe80::', 10, 'ipv6');
alwaysBlocked.addSubnet('ff00::', 8, 'ipv6');
alwaysBlocked.addAddress('fd00:ec2::254', 'ipv6');

/** Addresses that are not globally reachable (Python's `is_global` is false), reachable only with local targets allowed. */
const nonGlobal = new BlockList();
for (const [net, prefix] of [
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
] as const) nonGlobal.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['3fff::', 20],
  ['5f00::', 16],
  ['fc00::', 7],
] as const) nonGlobal.addSubnet(net, prefix, 'ipv6');

function expandIpv6(address: string): number[] {
  const parse = (part: string) => {
    if (!part) return [];
    const groups = part.split(':');
    const last = groups[groups.length - 1];
    if (last.includes('.')) {
      const [a, b, c, d] = last.split('.').map(Number);
      groups.splice(-1, 1, ((a << 8) | b).toString(16), ((c << 8) | d).toString(16));
    }
    return groups.map((g) => Number.parseInt(g, 16));
  };
  const gap = address.indexOf('::');
  if (gap < 0) return parse(address);
  const left = parse(address.slice(0, gap));
  const right = parse(address.slice(gap + 2));
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/** IPv4 addresses carried inside an IPv6 one (mapped, NAT64, 6to4), which must pass the IPv4 rules too. */
function embeddedIpv4(address: string): string | null {
  const g = expandIpv6(address);
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return v4(g[6], g[7]);
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return v4(g[6], g[7]);
  if (g[0] === 0x2002) return v4(g[1], g[2]);
  return null;
}

/** Whether a connection to this address is allowed under the policy. */
export function addressAllowed(address: string, policy: UrlPolicy): boolean {
  const bare = address.replace(/^\[|\]$/g, '').split('%')[0];
  const family = isIP(bare);
  if (family === 0) return false;
  if (family === 6) {
    const inner = embeddedIpv4(bare);
    if (inner !== null) return addressAllowed(inner, policy);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (alwaysBlocked.check(bare, type)) return false;
  if (policy.allowLocal) return true;
  return !nonGlobal.check(bare, type);
}

function hostMatches(host: string, pattern: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  const p = pattern.toLowerCase().replace(/\.$/, '');
  return h === p || h.endsWith(`.${p}`);
}

/** The reference's `is_host_allowed`, on the hostname only. */
export function hostAllowed(hostname: string, filterList: readonly string[]): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  const blocks = filterList.filter((e) => e.startsWith('!')).map((e) => e.slice(1));
  const allows = filterList.filter((e) => !e.startsWith('!'));
  if (allows.length > 0 && !allows.some((p) => hostMatches(host, p))) return false;
  return !blocks.some((p) => hostMatches(host, p));
}

/** Reads the policy from the environment: Parley's webhook-specific names first, then the reference's. */
export function urlPolicyFromEnv(raw: Record<string, string | undefined>): UrlPolicy {
  const list = (value: string | undefined) =>
    (value ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  const flag = (value: string | undefined) => value?.trim().toLowerCase() === 'true';
  const allowLocal =
    raw.EVENT_WEBHOOK_ALLOW_LOCAL !== undefined && raw.EVENT_WEBHOOK_ALLOW_LOCAL !== ''
      ? flag(raw.EVENT_WEBHOOK_ALLOW_LOCAL)
      : flag(raw.ENABLE_LOCAL_WEB_FETCH ?? raw.ENABLE_RAG_LOCAL_WEB_FETCH);
  const custom = raw.EVENT_WEBHOOK_FILTER_LIST !== undefined ? list(raw.EVENT_WEBHOOK_FILTER_LIST) : list(raw.WEB_FETCH_FILTER_LIST);
  return {
    allowLocal,
    filterList: [...new Set([...DEFAULT_FILTER_LIST, ...custom])],
    variables: { allowLocal: 'EVENT_WEBHOOK_ALLOW_LOCAL', filterList: 'EVENT_WEBHOOK_FILTER_LIST' },
  };
}

/** The reference's web-fetch rules (tool sources, web pages): ENABLE_LOCAL_WEB_FETCH and WEB_FETCH_FILTER_LIST. */
export function webFetchPolicyFromEnv(raw: Record<string, string | undefined>): UrlPolicy {
  const custom = (raw.WEB_FETCH_FILTER_LIST ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return {
    allowLocal: (raw.ENABLE_LOCAL_WEB_FETCH ?? raw.ENABLE_RAG_LOCAL_WEB_FETCH ?? '').trim().toLowerCase() === 'true',
    filterList: [...new Set([...DEFAULT_FILTER_LIST, ...custom])],
    variables: { allowLocal: 'ENABLE_LOCAL_WEB_FETCH', filterList: 'WEB_FETCH_FILTER_LIST' },
  };
}

const systemResolver: Resolver = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/** Checks URLs when saved or before a fetch, and builds the pinned `lookup` the HTTP client connects with. */
export class UrlGuard {
  /** URLs that passed `checkSyntax` (the policy never changes, and deliveries check the same few URLs again and again). */
  private readonly passed = new Set<string>();

  constructor(
    readonly policy: UrlPolicy,
    private readonly resolve: Resolver = systemResolver,
  ) {}

  /** The checks that need no DNS: syntax, scheme, credentials, filter list, and an IP literal host. */
  checkSyntax(url: string): void {
    if (this.passed.has(url)) return;
    this.parse(url);
    if (this.passed.size > 1000) this.passed.clear();
    this.passed.add(url);
  }

  private parse(url: string): URL {
    const usage = 'Use an http:// or https:// URL with a host and no user name or password.';
    if (/[\\\t\r\n]/.test(url)) throw new UrlRefusedError(`It contains a backslash, tab or line break. ${usage}`);
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new UrlRefusedError(`It is not a URL. ${usage}`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UrlRefusedError(`Its scheme is ${parsed.protocol}. ${usage}`);
    if (parsed.username || parsed.password) throw new UrlRefusedError(`It contains a user name or password. ${usage}`);
    if (!parsed.hostname) throw new UrlRefusedError(`It has no host. ${usage}`);
    if (!hostAllowed(parsed.hostname, DEFAULT_FILTER_LIST)) throw new UrlRefusedError(`${parsed.hostname} is a cloud metadata host, which is always refused.`);
    if (!hostAllowed(parsed.hostname, this.policy.filterList)) throw new UrlRefusedError(`${parsed.hostname} is refused by ${this.policy.variables.filterList}.`);
    const host = parsed.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) && !addressAllowed(host, this.policy)) throw addressRefusal(host, host, this.policy);
    return parsed;
  }

  /**
   * The save-time check. A name that does not resolve is refused, except with local
   * targets allowed, where (as in the reference) names are not resolved at save
   * time; the connection is checked in every case.
   */
  async check(url: string): Promise<void> {
    const parsed = this.parse(url);
    const host = parsed.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) return;
    let addresses: { address: string }[];
    try {
      addresses = await this.resolve(host);
    } catch {
      if (this.policy.allowLocal) return;
      throw new UrlRefusedError(`${host} does not resolve from the server.`);
    }
    if (addresses.length === 0) throw new UrlRefusedError(`${host} does not resolve from the server.`);
    const refused = addresses.find((a) => !addressAllowed(a.address, this.policy));
    if (refused) throw addressRefusal(refused.address, host, this.policy);
  }

  /** A `net.connect` lookup that refuses the whole answer when any resolved address is refused. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.resolve(hostname).then(
      (addresses) => {
        const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
        const refused = addresses.find((a) => !addressAllowed(a.address, this.policy));
        if (refused || wanted.length === 0) {
          const error = Object.assign(refused ? addressRefusal(refused.address, hostname, this.policy) : new Error(`no address for ${hostname}`), {
            code: refused ? 'EADDRREFUSED' : 'ENOTFOUND',
          });
          callback(error, '', 0);
          return;
        }
        if (options.all) (callback as unknown as (e: null, a: typeof wanted) => void)(null, wanted);
        else callback(null, wanted[0].address, wanted[0].family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}
