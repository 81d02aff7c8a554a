/**
 * Send time: an undici Agent whose connect hook resolves the host itself, refuses when any
 * resolved address is forbidden, and connects to an address it has just checked.
 */
import { Agent, buildConnector } from 'undici';
import { parseIp } from '../cidr.js';
import { resolveAllowedAddresses, toCidrs, type TargetCheckOptions } from './target-check.js';

export interface GuardedDispatcherOptions extends TargetCheckOptions {
  /** TCP (+TLS) connect timeout per address tried, default 10000 ms. */
  readonly connectTimeoutMs?: number;
  /** Extra TLS options for https targets (e.g. `ca` in tests). `servername` is always the URL host. */
  readonly tls?: { readonly ca?: string | Buffer | Array<string | Buffer>; readonly rejectUnauthorized?: boolean };
  /** Agent options other than `connect` (keep-alive, pipelining...). */
  readonly agentOptions?: Omit<Agent.Options, 'connect'>;
  /**
   * The connector that opens the socket once an address has passed, called with `hostname` set
   * to that IP address. Defaults to undici's `buildConnector`. Tests wrap it to observe (and
   * deny) every connect attempt.
   */
  readonly socketConnector?: buildConnector.connector;
  /** At most this many allowed addresses are tried in order when connecting fails, default 3. */
  readonly maxAddressesTried?: number;
}

/**
 * An undici connector that resolves and checks before connecting, then connects to the checked
 * IP address itself.
 */
function createGuardedConnector(options: GuardedDispatcherOptions = {}): buildConnector.connector {
  const allow = toCidrs(options.allowPrivateTargets);
  const checkOptions: TargetCheckOptions = {
    allowPrivateTargets: allow,
    lookup: options.lookup,
    lookupTimeoutMs: options.lookupTimeoutMs ?? options.connectTimeoutMs ?? 5000,
  };
  const base =
    options.socketConnector ??
    buildConnector({
      timeout: options.connectTimeoutMs ?? 10_000,
      ...(options.tls?.ca !== undefined ? { ca: options.tls.ca } : {}),
      ...(options.tls?.rejectUnauthorized !== undefined ? { rejectUnauthorized: options.tls.rejectUnauthorized } : {}),
    });
  const maxTried = Math.max(1, options.maxAddressesTried ?? 3);

  return function guardedConnect(connectOptions, callback) {
    const originalHost = connectOptions.hostname;
    const bare = originalHost.startsWith('[') ? originalHost.slice(1, -1) : originalHost;
    // SNI and certificate check against the name in the URL (never an IP: SNI forbids it).
    const servername = connectOptions.servername || (parseIp(bare) ? undefined : bare);

    resolveAllowedAddresses(bare, checkOptions).then(
      (addresses) => {
        const tried = addresses.slice(0, maxTried);
        const attempt = (index: number, lastError: Error | null): void => {
          const address = tried[index];
          if (address === undefined) {
            callback(lastError ?? new Error(`no address to connect to for ${bare}`), null);
            return;
          }
          try {
            base({ ...connectOptions, hostname: address, ...(servername ? { servername } : {}) }, (err, socket) => {
              if (err) attempt(index + 1, err);
              else callback(null, socket!);
            });
          } catch (err) {
            attempt(index + 1, err instanceof Error ? err : new Error(String(err)));
          }
        };
        attempt(0, null);
      },
      (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), null),
    );
  };
}

/**
 * The dispatcher every webhook delivery (real and test sends) must use. Send with
 * `dispatcher.request({...})` or `undici.request(url, { dispatcher })`; never compose a redirect
 * interceptor (see the file comment). Close it (`await dispatcher.close()`) on shutdown.
 */
export function createGuardedDispatcher(options: GuardedDispatcherOptions = {}): Agent {
  return new Agent({ ...(options.agentOptions ?? {}), connect: createGuardedConnector(options) });
}
