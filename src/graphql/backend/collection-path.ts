/**
 * The path of a collection under the backend (`graphql.backend.collectionPath`, e.g.
 * `/{db}/{collection}`), shared by the reader (its requests) and the read policy (the equivalent
 * REST read the ACL decides on), so both name the same path.
 */

/** `collectionPath` with `{db}` and `{collection}` filled in, kept per pair (the app's mappings name a handful). */
const collectionPaths = new Map<string, string>();
export function collectionPathOf(template: string, db: string, collection: string): string {
  const key = `${template}\u0000${db}\u0000${collection}`;
  let path = collectionPaths.get(key);
  if (path === undefined) {
    path = template.replaceAll('{db}', encodeURIComponent(db)).replaceAll('{collection}', encodeURIComponent(collection));
    if (collectionPaths.size >= 1024) collectionPaths.clear();
    collectionPaths.set(key, path);
  }
  return path;
}
