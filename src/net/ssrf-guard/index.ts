/**
 * SSRF guard for outbound requests to user-written URLs: webhooks, and the OAuth client metadata
 * documents of agent sign-in. Written for webhooks (SPEC §7.1, §7.2.3; notes/webhooks.md §B.5).
 *
 * A webhook URL is written by a user and fetched by Outrigger from inside the network, so it
 * must not become a way to reach loopback, private networks, link-local cloud metadata
 * (169.254.169.254) or other special-purpose addresses. `webhooks.allowPrivateTargets` (CIDRs)
 * opts chosen ranges back in, for self-hosted internal targets.
 *
 * Two checks, same rules:
 * - at write time, `checkWebhookUrlAtWrite` (scheme, no credentials, host resolves, every
 *   resolved address allowed) returns problems for a 400;
 * - at send time, `createGuardedDispatcher` returns an undici Agent whose `connect` hook resolves
 *   the host itself, refuses when ANY resolved address is forbidden, and then connects to an
 *   address it has just checked (never to the name), so a DNS answer that changes between the
 *   check and the connect (DNS rebinding) cannot slip through. For https the TLS server name
 *   (SNI and certificate check) stays the original host, and `Host` is untouched.
 *
 * Redirects are never followed: undici 7's `request`/`dispatch` on this Agent does not follow
 * them unless a redirect interceptor is composed in, which the delivery code must not do (a 3xx
 * answer is a failed delivery, and a redirect would be a second target). (`maxRedirections`
 * is gone from undici 7's request options: the runtime accepts only 0 without the interceptor,
 * and the types no longer list it.) If `fetch` is ever used with this dispatcher, it must pass
 * `redirect: 'manual'`.
 * Even a followed redirect would still go through this connect hook, so it could not reach a
 * forbidden address, but it must not happen.
 *
 * Which addresses are forbidden (every one is named in refusals, with its range):
 * IPv4: 0.0.0.0/8, 10/8, 100.64/10 (CGNAT), 127/8, 169.254/16, 172.16/12, 192.0.0/24,
 * 192.0.2/24, 192.88.99/24 (6to4 relay), 192.168/16, 198.18/15, 198.51.100/24, 203.0.113/24,
 * 224/4 (multicast), 240/4 (reserved, incl. 255.255.255.255).
 * IPv6: everything outside global unicast 2000::/3 (so ::, ::1, ::/96 IPv4-compatible,
 * fc00::/7, fe80::/10, fec0::/10, ff00::/8, 100::/64 ...), and inside it 2001::/23 (IETF
 * special purpose, incl. Teredo 2001::/32), 2001:db8::/32, 3fff::/20 (documentation) and
 * 5f00::/16 (SRv6). IPv4-mapped addresses (::ffff:a.b.c.d) are judged as the IPv4 address;
 * NAT64 64:ff9b::/96 and 6to4 2002::/16 are judged by the IPv4 address they embed (allowed
 * when it is public); local-use NAT64 64:ff9b:1::/48 is forbidden.
 * Host names are not judged by name: `localhost` or `metadata.google.internal` are refused
 * because of what they resolve to.
 */
export { classifyAddress, isForbiddenAddress } from './address-ranges.js';
export { checkWebhookUrlAtWrite, resolveAllowedAddresses, SsrfBlockedError, TargetResolutionError, type HostLookup } from './target-check.js';
export { createGuardedDispatcher } from './guarded-dispatcher.js';
