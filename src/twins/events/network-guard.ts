// Where webhooks may be sent: public addresses only, unless the operator allows a network
// (WEBHOOK_ALLOWED_NETWORKS). A subscription's URL is checked when it is made, and the address
// its host resolves to is checked again at each connection (a custom `lookup`), so a name that
// later resolves to a private address (DNS rebinding) reaches nothing.
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions, type LookupOneOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import proxyaddr from 'proxy-addr';

// Loopback, private, shared (CGNAT), link-local, documentation, benchmarking, multicast and
// reserved ranges (IANA special-purpose registries); in IPv6 also everything under ::/8
// (unspecified, loopback, IPv4-mapped and -compatible), NAT64, 6to4, Teredo, ULA, site-local.
const NON_PUBLIC_V4 = [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const;
const NON_PUBLIC_V6 = [
  ['::', 8], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 23], ['2001:db8::', 32], ['2002::', 16],
  ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const;

// One list per family: a BlockList checks an IPv4 address against its IPv6 ranges too, as
// IPv4-mapped (::ffff:a.b.c.d, inside ::/8), which would refuse every IPv4 address.
const nonPublicV4 = new BlockList();
for (const [net, prefix] of NON_PUBLIC_V4) nonPublicV4.addSubnet(net, prefix, 'ipv4');
const nonPublicV6 = new BlockList();
for (const [net, prefix] of NON_PUBLIC_V6) nonPublicV6.addSubnet(net, prefix, 'ipv6');

/** A webhook address refused: not public, and in no allowed network. */
export class NonPublicAddressError extends Error {
  override name = 'NonPublicAddressError';
  readonly code = 'EHEARTHNONPUBLIC';
  constructor(host: string, address: string) {
    super(`${host} resolves to ${address}, which is not a public address`);
  }
}

type Resolver = (hostname: string, options: LookupAllOptions, callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

export class NetworkGuard {
  private readonly allowed: (addr: string, i: number) => boolean;

  /** `allowedNetworks`: proxy-addr's syntax (addresses, CIDR ranges, loopback, linklocal, uniquelocal). */
  constructor(allowedNetworks: readonly string[], private readonly resolve: Resolver = dnsLookup) {
    this.allowed = proxyaddr.compile([...allowedNetworks]);
  }

  /** Whether a webhook may be sent to this IP address. */
  permits(address: string): boolean {
    const family = isIP(address);
    if (!family) return false;
    return this.allowed(address, 0) || !(family === 4 ? nonPublicV4.check(address, 'ipv4') : nonPublicV6.check(address, 'ipv6'));
  }

  /** The URL's host as an address (an IPv6 literal without its brackets), when it is one. */
  static literalOf(url: URL): string | undefined {
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    return isIP(host) ? host : undefined;
  }

  /** Every address `hostname` resolves to, each permitted; rejects with NonPublicAddressError or the resolver's error. */
  addressesOf(hostname: string): Promise<LookupAddress[]> {
    const literal = isIP(hostname) ? hostname : undefined;
    if (literal) return this.permits(literal) ? Promise.resolve([{ address: literal, family: isIP(literal) }]) : Promise.reject(new NonPublicAddressError(hostname, literal));
    return new Promise((resolve, reject) => {
      this.resolve(hostname, { all: true }, (err, addresses) => {
        if (err) return reject(err);
        const refused = addresses.find((a) => !this.permits(a.address));
        if (refused) return reject(new NonPublicAddressError(hostname, refused.address));
        if (!addresses.length) return reject(new Error(`${hostname} resolves to no address`));
        resolve(addresses);
      });
    });
  }

  /** A `lookup` for http(s).request that answers only permitted addresses (checked when the connection is made). */
  readonly lookup = (hostname: string, options: LookupOneOptions | LookupAllOptions, callback: (...args: unknown[]) => void): void => {
    this.addressesOf(hostname).then(
      (addresses) => (options.all ? callback(null, addresses) : callback(null, addresses[0]!.address, addresses[0]!.family)),
      (err: unknown) => callback(err),
    );
  };
}
