import type { StaticUser } from '../../config/types.js';
import { hashPassword, parsePasswordHash, verifyPassword, type ParsedHash } from '../password-hash.js';
import type { UserVerifier } from './user-verifier.js';

/** `users.source: static`. Unknown ids still cost one scrypt, so timing does not reveal which ids exist. */
export async function createStaticUserVerifier(users: StaticUser[]): Promise<UserVerifier> {
  const byId = new Map<string, { hash: ParsedHash; roles: string[] }>();
  for (const user of users) {
    const hash = parsePasswordHash(user.password);
    if (!hash) throw new Error(`users.static: the password of ${user.id} is not a valid scrypt hash; create one with \`outrigger hash-password\``);
    byId.set(user.id, { hash, roles: user.roles });
  }
  const decoy = parsePasswordHash(await hashPassword('decoy-password-for-unknown-users'))!;
  return {
    verifiedLocally: true,
    async verify(id, password) {
      const user = byId.get(id);
      const ok = await verifyPassword(password, user?.hash ?? decoy);
      return user && ok ? { roles: [...user.roles] } : null;
    },
  };
}
