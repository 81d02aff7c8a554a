import { describe, expect, it } from 'vitest';
import { createShapeClassifier, interpolateUserVariables, projectResponse, projectionHides } from '../../../src/access/mongo-rules.js';
import { hashPassword, parsePasswordHash, verifyPassword } from '../../../src/access/password-hash.js';
import type { Principal } from '../../../src/principal/principal.js';

// The pure parts of access: which backend path a readFilter narrows, the caller's variables in a
// filter, projectResponse, and the stored password format. Written so that `npm run mutate`
// kills their mutants (issue 54); each is also reached through HTTP by test/integration/access.
const alice: Principal = { id: 'alice', roles: ['user', 'admin'], via: 'basic', verifiedLocally: true };

describe('collection shape', () => {
  const shape = createShapeClassifier('/{db}/{collection}');
  it('tells the collection, one document, and anything deeper or special apart', () => {
    expect(shape('/db')).toBeNull();
    expect(shape('/')).toBeNull();
    expect(shape('/db/coll')).toBe('collection');
    expect(shape('/db/coll/')).toBe('collection');
    expect(shape('/db/coll/doc1')).toBe('document');
    expect(shape('/db/coll/_size')).toBe('other');
    expect(shape('/db/coll/_aggrs')).toBe('other');
    expect(shape('/db/coll/doc1/x')).toBe('other');
  });
  it('follows the configured depth', () => {
    const deep = createShapeClassifier('/api/{db}/{collection}');
    expect(deep('/api/db')).toBeNull();
    expect(deep('/api/db/coll')).toBe('collection');
    expect(deep('/api/db/coll/d')).toBe('document');
  });
});

describe('user variables in a filter', () => {
  it('replaces @user.id, @user._id and @user.roles, deep in objects and arrays, and nothing else', () => {
    const filter = { owner: '@user.id', alt: '@user._id', $or: [{ team: { $in: '@user.roles' } }, { n: 1, s: '@user.name', b: true, z: null }], plain: 'x' };
    const out = interpolateUserVariables(filter, alice) as Record<string, any>;
    expect(out).toEqual({ owner: 'alice', alt: 'alice', $or: [{ team: { $in: ['user', 'admin'] } }, { n: 1, s: '@user.name', b: true, z: null }], plain: 'x' });
    // The roles are a copy: the principal's own array is not handed out.
    expect(out.$or[0].team.$in).not.toBe(alice.roles);
    expect(filter.owner).toBe('@user.id');
  });
});

describe('projectResponse', () => {
  const doc = { _id: 1, name: 'n', secret: 's', nested: { a: 1, b: 2, deep: { x: 1, y: 2 } }, list: [1] };
  it('with 1 keeps only the listed paths, nested ones too', () => {
    expect(projectResponse(doc, { name: 1, 'nested.a': 1, 'nested.deep.y': 1, missing: 1, 'missing.deep': 1 })).toEqual({ name: 'n', nested: { a: 1, deep: { y: 2 } } });
  });
  it('with 0 removes the listed paths and keeps the rest, without touching the original', () => {
    const out = projectResponse(doc, { secret: 0, 'nested.b': 0, 'nested.deep.x': 0, 'missing.path': 0 });
    expect(out).toEqual({ _id: 1, name: 'n', nested: { a: 1, deep: { y: 2 } }, list: [1] });
    expect(doc.secret).toBe('s');
    expect(doc.nested.b).toBe(2);
  });
  it('applies to each element of an array and leaves non-objects alone', () => {
    expect(projectResponse([{ a: 1, b: 2 }, 'text', null, [1]], { b: 0 })).toEqual([{ a: 1 }, 'text', null, [1]]);
    expect(projectResponse('text', { b: 0 })).toBe('text');
    expect(projectResponse([{ a: 1, b: 2 }], { b: 1 })).toEqual([{ b: 2 }]);
  });
  it('does not read inherited properties', () => {
    expect(projectResponse({ a: 1 }, { toString: 1, constructor: 1 } as Record<string, 0 | 1>)).toEqual({});
  });
});

describe('projectionHides', () => {
  it('with an exclusion hides the excluded path, what is inside it and what holds it', () => {
    const hides = projectionHides({ 'a.b': 0 });
    expect(['a', 'a.b', 'a.b.c', 'a.0.b'].map(hides)).toEqual([true, true, true, true]);
    expect(['b', 'a.c', 'ab'].map(hides)).toEqual([false, false, false]);
  });
  it('with an inclusion hides every path no included path holds whole', () => {
    const hides = projectionHides({ 'a.b': 1, c: 1 });
    expect(['a.b', 'a.b.c', 'c', 'c.d', 'items.0.c'].map(hides)).toEqual([false, false, false, false, true]);
    expect(['a', 'a.c', 'd', '_id'].map(hides)).toEqual([true, true, true, true]);
  });
});

describe('stored passwords', () => {
  it('hashes in the scrypt$N$r$p$salt$hash format and verifies only the right password', async () => {
    const stored = await hashPassword('correct horse');
    expect(stored).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    const parsed = parsePasswordHash(stored)!;
    expect(parsed).toMatchObject({ N: 32768, r: 8, p: 1 });
    expect(parsed.salt).toHaveLength(16);
    expect(parsed.hash).toHaveLength(32);
    expect(await verifyPassword('correct horse', parsed)).toBe(true);
    expect(await verifyPassword('correct horsE', parsed)).toBe(false);
  });

  it('refuses malformed stored hashes', () => {
    const salt = Buffer.alloc(8, 1).toString('base64');
    const hash = Buffer.alloc(16, 2).toString('base64');
    expect(parsePasswordHash(`scrypt$1024$8$1$${salt}$${hash}`)).toMatchObject({ N: 1024, r: 8, p: 1 });
    for (const bad of [
      `bcrypt$1024$8$1$${salt}$${hash}`,
      `scrypt$1024$8$1$${salt}`,
      `scrypt$1024$8$1$${salt}$${hash}$x`,
      `scrypt$1000$8$1$${salt}$${hash}`,
      `scrypt$${2 ** 21}$8$1$${salt}$${hash}`,
      `scrypt$0$8$1$${salt}$${hash}`,
      `scrypt$1024$0$1$${salt}$${hash}`,
      `scrypt$1024$8$0$${salt}$${hash}`,
      `scrypt$1024$8.5$1$${salt}$${hash}`,
      `scrypt$1024$8$-1$${salt}$${hash}`,
      `scrypt$1024$8$1$${Buffer.alloc(7).toString('base64')}$${hash}`,
      `scrypt$1024$8$1$${salt}$${Buffer.alloc(15).toString('base64')}`,
    ])
      expect(parsePasswordHash(bad), bad).toBeNull();
    expect(parsePasswordHash(`scrypt$${2 ** 20}$8$1$${salt}$${hash}`)).not.toBeNull();
  });
});
