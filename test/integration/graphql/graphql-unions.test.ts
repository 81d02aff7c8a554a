/**
 * RESTHeart's `$typeResolver` semantics (SPEC §6.2, issue 27 item 5): a union written the way
 * RESTHeart's documentation writes it (`field-exists(isbn)` for Book, `field-exists(director)`
 * for Film) is accepted; the write answers with a `warnings` array naming the overlap and the
 * type that wins it (the first written), `outrigger apply`/`check` (applySetup) report the same
 * warning, and every document gets the right `__typename`. An unreachable member is still a 400.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStandinBackend, type StandinBackend } from '../../../examples/standin-backend/index.js';
import { graphqlAppSetupKind } from '../../../src/graphql/document/setup-kind.js';
import { applySetup } from '../../../src/setup/apply-setup.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';
import { basic, startTestOutrigger, staticUsers, testConfig } from '../../support/outrigger.js';
import { call, gql } from './graphql-helpers.js';

const ROOT = basic('root', 'root-password');

const media = {
  _id: 'media',
  descriptor: { uri: 'media' },
  schema: `
    type Book { title: String, isbn: String }
    type Film { title: String, director: String }
    union Media = Book | Film
    type Query { media: [Media] }
  `,
  mappings: {
    Media: { $typeResolver: { Book: 'field-exists(isbn)', Film: 'field-exists(director)' } },
    Query: { media: { db: 'lib', collection: 'media', sort: { _id: 1 } } },
  },
};

const WARNING =
  'mappings.Media.$typeResolver.Film: overlaps Book: a document can match both ("field-exists(isbn)" and "field-exists(director)", e.g. when isbn exists, director exists); Book, written first, wins it';

describe('$typeResolver: the first predicate written wins (RESTHeart)', () => {
  let redis: TestRedis;
  let backend: StandinBackend;
  let proxy: Awaited<ReturnType<typeof startTestOutrigger>>;

  beforeAll(async () => {
    redis = await startTestRedis();
    backend = await startStandinBackend({
      data: {
        lib: {
          media: [
            { _id: 1, title: 'Dune', isbn: '978-0441013593' },
            { _id: 2, title: 'Alien', director: 'Ridley Scott' },
            { _id: 3, title: 'Dune (the book of the film)', isbn: '978-0593099322', director: 'Denis Villeneuve' },
          ],
        },
      },
    });
    proxy = await startTestOutrigger({
      service: { id: 'gql-unions' },
      upstream: { url: backend.url },
      redis: { url: redis.url },
      users: await staticUsers({ root: ['root'] }),
      acl: { mode: 'own-routes' },
    });
  });

  afterAll(async () => {
    await proxy?.stop();
    await backend?.close();
    await redis?.close();
  });

  it('the overlapping union is accepted; the write answers 201 with the warning; GET answers the document as stored', async () => {
    const res = await call(proxy.url, '/gql-apps/media', { method: 'PUT', auth: ROOT, body: media });
    expect(res.status).toBe(201);
    expect(res.json.warnings).toEqual([WARNING]);
    const read = await call(proxy.url, '/gql-apps/media', { auth: ROOT });
    expect(read.json.warnings).toBeUndefined();
    const again = await call(proxy.url, '/gql-apps/media', { method: 'PUT', auth: ROOT, body: read.json });
    expect(again.status).toBe(200);
    expect(again.json.warnings).toEqual([WARNING]);
  });

  it('each document gets the right __typename; one matching both is the first written (Book)', async () => {
    const res = await gql(proxy.url, 'media', '{ media { __typename ... on Book { title isbn } ... on Film { title director } } }', { auth: ROOT });
    expect(res.status).toBe(200);
    expect(res.json.data.media).toEqual([
      { __typename: 'Book', title: 'Dune', isbn: '978-0441013593' },
      { __typename: 'Film', title: 'Alien', director: 'Ridley Scott' },
      { __typename: 'Book', title: 'Dune (the book of the film)', isbn: '978-0593099322' },
    ]);
  });

  it('a member no document can reach (every match taken by an earlier entry) is still a 400', async () => {
    const shadowed = structuredClone(media);
    shadowed.mappings.Media.$typeResolver = { Book: 'field-exists(title)', Film: 'field-exists(title) and field-exists(director)' };
    const res = await call(proxy.url, '/gql-apps/shadowed', { method: 'PUT', auth: ROOT, body: { ...shadowed, _id: 'shadowed', descriptor: { uri: 'shadowed' } } });
    expect(res.status).toBe(400);
    expect(res.json.message).toContain('Film is unreachable');
  });

  it('apply and check (applySetup) report the same warning, with where it is', async () => {
    const config = testConfig({ service: { id: 'gql-unions-setup' }, upstream: { url: backend.url }, redis: { url: redis.url } });
    const summary = await applySetup({ apps: [media] }, [graphqlAppSetupKind(config)], { offline: true });
    expect(summary.warnings).toEqual([`apps[0] (media): ${WARNING}`]);
  });
});
