/**
 * `outrigger check` prints the warnings of an accepted setup file (SPEC §6.2, issue 27 item 5):
 * an `acl.bootstrap` app whose union is written as RESTHeart's docs write it
 * (`field-exists(isbn)` / `field-exists(director)`) is OK, with one warning naming the overlap
 * and the type that wins it; exit 0.
 */
import { describe, expect, it } from 'vitest';
import { runCli, writeTempFile } from '../../support/clients/cli.js';

describe('outrigger check and $typeResolver overlaps', () => {
  it('prints the overlap as a warning and exits 0', async () => {
    const setup = writeTempFile('setup.yaml', {
      apps: [
        {
          _id: 'media',
          descriptor: { uri: 'media' },
          schema: 'type Book { isbn: String } type Film { director: String } union Media = Book | Film type Query { media: [Media] }',
          mappings: { Media: { $typeResolver: { Book: 'field-exists(isbn)', Film: 'field-exists(director)' } }, Query: { media: { db: 'lib', collection: 'media' } } },
        },
      ],
    });
    const written = writeTempFile('outrigger.yaml', `service: { id: unions }\nupstream: { url: "http://127.0.0.1:9" }\nacl: { bootstrap: ${JSON.stringify(setup)} }\n`);
    const { code, stdout, stderr } = await runCli(['check', '-c', written]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain(`acl.bootstrap(${setup}): warning: apps[0] (media): mappings.Media.$typeResolver.Film: overlaps Book`);
    expect(stdout).toContain('Book, written first, wins it');
    expect(stdout).toMatch(/OK \(bootstrap .*setup\.yaml: OK\)/);
  });
});
