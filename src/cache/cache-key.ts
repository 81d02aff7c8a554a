/**
 * The key of a cached read (SPEC §12 "Keyed on what the backend receives"): the method, the
 * target sent upstream (path and query after the readFilter), who the backend is told the caller
 * is, and the request headers it may answer by, each as it goes upstream. Hashed (SHA-256), so a
 * key is 43 characters whatever the client sends, and no key holds a credential.
 */
import { createHash } from 'node:crypto';

/** A request header's value as the backend receives it (after the plan removed or set it); undefined when absent. */
export type UpstreamHeader = (lowerName: string) => string | undefined;

/** The headers every key holds: credentials by their hash (inside the key's), and what content negotiation reads. */
const KEYED_HEADERS = ['authorization', 'cookie', 'accept', 'accept-encoding'] as const;

/**
 * `identity`: who Outrigger tells the backend the caller is, by what it says (user id and roles;
 * a minted JWT by its claims, never its bytes, which change at every mint), or '' when the
 * backend is told nothing beyond the headers.
 */
export function primaryKey(target: string, identity: string, header: UpstreamHeader): string {
  const hash = createHash('sha256').update('GET\0').update(target).update('\0').update(identity);
  for (const name of KEYED_HEADERS) hash.update('\0').update(header(name) ?? '\u0001');
  return hash.digest('base64url');
}

/** The key of one variant of an answer that says `Vary`: the primary key and the named headers' values. */
export function variantKey(primary: string, vary: readonly string[], header: UpstreamHeader): string {
  const hash = createHash('sha256').update(primary);
  for (const name of vary)
    hash
      .update('\0')
      .update(name)
      .update('=')
      .update(header(name) ?? '\u0001');
  return hash.digest('base64url');
}
