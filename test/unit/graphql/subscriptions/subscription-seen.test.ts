/**
 * What each identity may see of a batch of changes (src/graphql/subscribe/seen.ts, issue 38): one
 * `$in` re-read per batch instead of one per change; identities the backend cannot tell apart
 * share one read, with a readFilter of plain string equalities applied in memory (each sees only
 * what its own filtered read would have returned, projected as its permission says); any other
 * readFilter still goes to the backend, one read per identity; an answer without `_id`s is read
 * again id by id; a shared read the backend refuses falls back to one read per identity.
 */
import { describe, expect, it } from 'vitest';
import type { BackendRead, BackendReader, ReadDecision, ReadPolicy, RequestContext } from '../../../../src/graphql/types.js';
import { compileMatcher } from '../../../../src/graphql/values/local-match.js';
import { withinShape } from '../../../../src/graphql/values/paths.js';
import { DELETE_SEEN, inMemoryFilter, seeAll, type Viewer } from '../../../../src/graphql/subscribe/seen.js';
import type { Change } from '../../../../src/graphql/subscribe/change.js';

const docs = [
  { _id: 'o1', owner: 'alice', total: 5, secret: 's1' },
  { _id: 'o2', owner: 'bob', total: 50, secret: 's2' },
  { _id: 'o3', owner: ['alice', 'bob'], total: 500, secret: 's3' },
];

function fakeReader(o: { hideIds?: boolean; refuseUnfiltered?: boolean } = {}) {
  const reads: Array<{ filter: unknown; who: string | undefined }> = [];
  const reader: BackendReader = {
    async find(read: BackendRead, ctx: RequestContext) {
      reads.push({ filter: read.filter, who: ctx.principal?.id });
      if (o.refuseUnfiltered && !JSON.stringify(read.filter).includes('$and')) throw new Error('403 from the backend');
      const match = compileMatcher(read.filter ?? {})!;
      return docs.filter((d) => match(d)).map((d) => (o.hideIds ? { ...d, _id: undefined } : d));
    },
  } as BackendReader;
  return { reader, reads };
}

const ctxOf = (id: string): RequestContext => ({ principal: { id, roles: ['user'] } });
const viewer = (id: string): Viewer => ({ key: id, ctx: ctxOf(id) });
const insert = (_id: string): Change => ({ db: 'shop', collection: 'orders', op: 'insert', _id });

/** A policy per user: a readFilter (owner = user) and, for bob, a projection hiding `secret`. */
function policy(filterOf: (user: string) => Record<string, unknown> | undefined): ReadPolicy {
  return (_target, ctx): ReadDecision => {
    const user = ctx.principal?.id ?? '';
    if (user === 'nobody') return { allow: false };
    const filter = filterOf(user);
    const project = user === 'bob' ? (doc: unknown) => ({ ...(doc as object), secret: undefined }) : undefined;
    return { allow: true, ...(filter ? { filter } : {}), ...(project ? { project } : {}) };
  };
}

const ids = (row: unknown[] | undefined) => (row ?? []).map((d) => (d && typeof d === 'object' ? (d as { _id: string })._id : d));

describe('subscription re-reads (seen.ts)', () => {
  it('one $in read per batch; identities with plain-equality readFilters share it and each sees only its own documents, projected', async () => {
    const { reader, reads } = fakeReader();
    const seen = await seeAll(
      {
        reader,
        readPolicy: policy((u) => ({ owner: u })),
        onError: (e) => {
          throw e;
        },
      },
      [insert('o1'), insert('o2'), insert('o3'), insert('o1')],
      [viewer('alice'), viewer('bob'), viewer('nobody')],
    );
    expect(reads).toEqual([{ filter: { _id: { $in: ['o1', 'o2', 'o3'] } }, who: 'alice' }]);
    expect(ids(seen.get('alice'))).toEqual(['o1', null, 'o3', 'o1']);
    expect(ids(seen.get('bob'))).toEqual([null, 'o2', 'o3', null]);
    expect((seen.get('bob')![1] as { secret?: string }).secret).toBeUndefined();
    expect((seen.get('alice')![0] as { secret?: string }).secret).toBe('s1');
    expect(seen.get('nobody')).toEqual([null, null, null, null]);
  });

  it('a readFilter the process does not apply itself goes to the backend, one read per identity', async () => {
    const { reader, reads } = fakeReader();
    const seen = await seeAll(
      {
        reader,
        readPolicy: policy((u) => (u === 'alice' ? { total: { $lt: 100 } } : { owner: u })),
        onError: (e) => {
          throw e;
        },
      },
      [insert('o1'), insert('o2'), insert('o3')],
      [viewer('alice'), viewer('bob')],
    );
    expect(reads).toHaveLength(2);
    expect(reads).toContainEqual({ filter: { $and: [{ _id: { $in: ['o1', 'o2', 'o3'] } }, { total: { $lt: 100 } }] }, who: 'alice' });
    expect(reads).toContainEqual({ filter: { $and: [{ _id: { $in: ['o1', 'o2', 'o3'] } }, { owner: 'bob' }] }, who: 'bob' });
    expect(ids(seen.get('alice'))).toEqual(['o1', 'o2', null]);
    expect(ids(seen.get('bob'))).toEqual([null, 'o2', 'o3']);
  });

  it('one identity alone reads as before: {_id} with its filter for a single change', async () => {
    const { reader, reads } = fakeReader();
    const seen = await seeAll(
      {
        reader,
        readPolicy: policy((u) => ({ owner: u })),
        onError: (e) => {
          throw e;
        },
      },
      [insert('o2')],
      [viewer('alice')],
    );
    expect(reads).toEqual([{ filter: { $and: [{ _id: 'o2' }, { owner: 'alice' }] }, who: 'alice' }]);
    expect(seen.get('alice')).toEqual([null]);
  });

  it('without a read policy (service credentials, own-routes) every identity shares one read', async () => {
    const { reader, reads } = fakeReader();
    const seen = await seeAll(
      {
        reader,
        readPolicy: undefined,
        onError: (e) => {
          throw e;
        },
      },
      [insert('o1'), insert('o2')],
      [viewer('alice'), viewer('bob'), viewer('carol')],
    );
    expect(reads).toHaveLength(1);
    for (const who of ['alice', 'bob', 'carol']) expect(ids(seen.get(who))).toEqual(['o1', 'o2']);
  });

  it('an answer without _id is read again id by id; a refused shared read falls back to one read per identity', async () => {
    const hidden = fakeReader({ hideIds: true });
    const a = await seeAll(
      {
        reader: hidden.reader,
        readPolicy: undefined,
        onError: (e) => {
          throw e;
        },
      },
      [insert('o1'), insert('o2')],
      [viewer('alice')],
    );
    expect(hidden.reads.map((r) => r.filter)).toEqual([{ _id: { $in: ['o1', 'o2'] } }, { _id: 'o1' }, { _id: 'o2' }]);
    expect(a.get('alice')!.map((d) => (d as { owner: string }).owner)).toEqual(['alice', 'bob']);
    const refusing = fakeReader({ refuseUnfiltered: true });
    const b = await seeAll(
      {
        reader: refusing.reader,
        readPolicy: policy((u) => ({ owner: u })),
        onError: (e) => {
          throw e;
        },
      },
      [insert('o1'), insert('o2')],
      [viewer('alice'), viewer('bob')],
    );
    expect(refusing.reads).toHaveLength(3);
    expect(ids(b.get('alice'))).toEqual(['o1', null]);
    expect(ids(b.get('bob'))).toEqual([null, 'o2']);
  });

  it('deletes without a document: seen by identities whose permission has no readFilter', async () => {
    const { reader, reads } = fakeReader();
    const del: Change = { db: 'shop', collection: 'orders', op: 'delete', _id: 'o9' };
    const seen = await seeAll(
      {
        reader,
        readPolicy: policy((u) => (u === 'admin' ? undefined : { owner: u })),
        onError: (e) => {
          throw e;
        },
      },
      [del],
      [viewer('admin'), viewer('alice')],
    );
    expect(reads).toEqual([]);
    expect(seen.get('admin')).toEqual([DELETE_SEEN]);
    expect(seen.get('alice')).toEqual([null]);
  });

  it('applies in memory only strings and booleans compared at the top level, as MongoDB compares them', () => {
    expect(inMemoryFilter({ owner: 'a' })!({ owner: ['b', 'a'] })).toBe(true);
    expect(inMemoryFilter({ owner: 'a' })!({ owner: [['a']] })).toBe(false);
    expect(inMemoryFilter({ owner: 'a' })!({ owner: 'A' })).toBe(false);
    expect(inMemoryFilter({ open: true })!({ open: 1 })).toBe(false);
    for (const f of [{ n: 5 }, { owner: null }, { 'a.b': 'x' }, { _id: 'x' }, { $or: [{ a: 'x' }] }, { owner: { $eq: 'a' } }]) expect(inMemoryFilter(f as Record<string, unknown>)).toBeUndefined();
  });

  describe('changes that carry their own state (issue 53)', () => {
    const carried = (_id: string, document: Record<string, unknown>, shared = true): Change => ({
      db: 'shop',
      collection: 'orders',
      op: 'update',
      _id,
      document,
      ...(shared ? { shared: true as const } : {}),
    });
    const negative = (): ReadPolicy => (_target, ctx) => {
      const user = ctx.principal?.id;
      if (user === 'ne') return { allow: true, filter: { confidential: { $ne: true } } };
      if (user === 'nin') return { allow: true, filter: { level: { $nin: ['secret'] } } };
      if (user === 'absent') return { allow: true, filter: { embargo: { $exists: false } } };
      if (user === 'isnull') return { allow: true, filter: { flag: null } };
      return { allow: true, project: (doc) => ({ ...(doc as object), secret: undefined }) };
    };
    const quiet = {
      onError: (e: unknown) => {
        throw e;
      },
    };

    it("shared states are decided in process under each viewer's own readFilter (negative ones included), projected; no read", async () => {
      const { reader, reads } = fakeReader();
      const secret = carried('s1', { _id: 's1', confidential: true, level: 'secret', embargo: '2030', flag: 'x', secret: 'k' });
      const plain = carried('p1', { _id: 'p1', secret: 'k' });
      const who = ['ne', 'nin', 'absent', 'isnull', 'carol'];
      const seen = await seeAll({ reader, readPolicy: negative(), ...quiet }, [secret, plain], who.map(viewer), true);
      expect(reads).toEqual([]);
      for (const w of ['ne', 'nin', 'absent', 'isnull']) expect(ids(seen.get(w))).toEqual([null, 'p1']);
      expect(seen.get('carol')!.map((d) => (d as { secret?: string }).secret)).toEqual([undefined, undefined]);
    });

    it('the state is the carried one, never a later one the re-read would show', async () => {
      const { reader, reads } = fakeReader(); // o1 is stored with total 5
      const seen = await seeAll({ reader, readPolicy: undefined, ...quiet }, [carried('o1', { _id: 'o1', owner: 'alice', total: 1 })], [viewer('alice')], true);
      expect(reads).toEqual([]);
      expect(seen.get('alice')).toEqual([{ _id: 'o1', owner: 'alice', total: 1 }]);
    });

    it('where the backend may show the viewer otherwise, its own re-read gates the carried state: not shown, not delivered; only the fields it shows', async () => {
      const hidingReader: BackendReader = {
        async find(read: BackendRead, ctx: RequestContext) {
          const match = compileMatcher(read.filter ?? {})!;
          // The backend's own ACL: bob is never shown o2, and never shown `secret`.
          return docs.filter((d) => match(d) && !(ctx.principal?.id === 'bob' && d._id === 'o2')).map((d) => (ctx.principal?.id === 'bob' ? { ...d, secret: undefined } : d));
        },
      } as BackendReader;
      const changes = [carried('o1', { _id: 'o1', owner: 'alice', total: 1, secret: 'old' }, false), carried('o2', { _id: 'o2', owner: 'bob', total: 2, secret: 'old' }, false)];
      const seen = await seeAll({ reader: hidingReader, readPolicy: undefined, ...quiet }, changes, [viewer('bob')], false);
      expect(seen.get('bob')).toEqual([{ _id: 'o1', owner: 'alice', total: 1 }, null]);
    });

    it('withinShape keeps the carried values only where the other read shows the field, at any depth', () => {
      const doc = { a: 1, hidden: 2, sub: { x: 1, secret: 2 }, items: [{ n: 1, cost: 9 }, 'plain'], changed: { deep: 1 }, id: { $oid: 'ab' } };
      const shape = { a: 7, sub: { x: 0 }, items: [{ n: 5 }], changed: 'now a string', id: { $oid: 'ab' } };
      expect(withinShape(doc, shape)).toEqual({ a: 1, sub: { x: 1 }, items: [{ n: 1 }, 'plain'], id: { $oid: 'ab' } });
    });

    it('a carried delete read with an identity is not guessed at when the readFilter names a field it lacks', async () => {
      const { reader } = fakeReader();
      const del = (document: Record<string, unknown>, shared: boolean): Change => ({
        db: 'shop',
        collection: 'orders',
        op: 'delete',
        _id: document._id,
        document,
        ...(shared ? { shared: true as const } : {}),
      });
      const lacking = { _id: 'd1', status: 'x' };
      const own = await seeAll({ reader, readPolicy: negative(), ...quiet }, [del(lacking, false), del({ ...lacking, confidential: false }, false)], [viewer('ne')], false);
      expect(ids(own.get('ne'))).toEqual([null, 'd1']);
      const shared = await seeAll({ reader, readPolicy: negative(), ...quiet }, [del(lacking, true)], [viewer('ne')], true);
      expect(ids(shared.get('ne'))).toEqual(['d1']);
    });
  });
});
