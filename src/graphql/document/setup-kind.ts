/**
 * The one write validation of GraphQL app documents (SPEC §6.2), shared by every door: the
 * `<appsPath>` routes, `outrigger apply`, `acl.bootstrap` and `outrigger check`.
 */
import type { OutriggerConfig } from '../../config/types.js';
import { conflict, ValidationError } from '../../errors.js';
import type { Validation } from '../../http/document-routes.js';
import type { SetupKind } from '../../setup/setup-kind.js';
import type { DocumentStore, StoredDocument } from '../../store/document-store.js';
import type { GraphqlApp } from '../app-document.js';
import { validateAppDocument } from './validate-app.js';
import { toolNameClashes } from './mcp-tools.js';

/** An app as stored: validated and normalised (descriptor defaults filled, uri without slashes). */
export type StoredApp = GraphqlApp & StoredDocument;

/** The warnings of each document a validator accepted (the same object the write goes on with). */
const acceptedWarnings = new WeakMap<object, string[]>();

/** What the write of `doc` answers beside it (`warnings`, SPEC §6.2); empty for a document no validator saw. */
export function warningsOf(doc: object): string[] {
  return acceptedWarnings.get(doc) ?? [];
}

/** Full validation of a candidate; answers the normalised document with `_id` first. */
export function appValidator(config: OutriggerConfig) {
  const opts = { defaultDb: config.graphql.defaultDb, maxLimit: config.graphql.maxLimit, aggregations: config.graphql.aggregations };
  return (candidate: Record<string, unknown>): Validation<StoredApp> => {
    const result = validateAppDocument(candidate, opts);
    if (!result.ok) return result;
    const { _id, ...rest } = result.app;
    if (typeof _id !== 'string') return { ok: false, problems: ['_id must be a non-empty string'] };
    const doc: StoredApp = { _id, ...rest };
    const idle = rest.descriptor.cache !== undefined ? idleAnswerCache(config) : undefined;
    const warnings = idle === undefined ? result.warnings : [...result.warnings, idle];
    if (warnings.length > 0) acceptedWarnings.set(doc, warnings);
    return { ok: true, doc };
  };
}

/**
 * Why `descriptor.cache` would keep nothing on this service, or undefined. Without `cache.rules`
 * the app itself starts the cache (graphql/module.ts); only a GraphQL backend that is not the
 * upstream keeps it idle: the cache would not see the writes that must drop its answers.
 */
function idleAnswerCache(config: OutriggerConfig): string | undefined {
  if (new URL(config.graphql.backend.url).origin !== new URL(config.upstream.url).origin)
    return 'descriptor.cache has no effect here: graphql.backend.url is not the upstream, whose writes the cache sees';
  return undefined;
}

/**
 * At write: another app (different `_id`) already served at the candidate's uri → 409
 * "URI collision: another GraphQL app is already accessible at /graphql/<uri>".
 * `candidate` must be validated (its uri normalised).
 */
export function findUriConflict(existing: Iterable<GraphqlApp>, candidate: GraphqlApp): GraphqlApp | undefined {
  for (const app of existing) {
    if (app._id !== undefined && app._id === candidate._id) continue;
    if (app.descriptor.uri === candidate.descriptor.uri) return app;
  }
  return undefined;
}

/** 409 when another app (another `_id`) already serves the candidate's uri. */
export function uriCollision(others: Iterable<GraphqlApp>, candidate: GraphqlApp, graphqlPrefix: string): Error | undefined {
  const other = findUriConflict(others, candidate);
  if (!other) return undefined;
  return conflict(`URI collision: the GraphQL app ${JSON.stringify(other._id)} is already served at ${graphqlPrefix}/${candidate.descriptor.uri}; choose another descriptor.uri`, 'URI_COLLISION');
}

/** 400 when an enabled candidate names a tool another enabled app already offers (SPEC §11). */
export function toolNameCollision(others: Iterable<GraphqlApp>, candidate: GraphqlApp): Error | undefined {
  const problems = toolNameClashes(others, candidate);
  return problems.length > 0 ? new ValidationError(problems) : undefined;
}

/** Duplicate uris within a set of apps (a setup file together with the apps already stored). */
function duplicateUris(docs: StoredDocument[], graphqlPrefix: string): string[] {
  const byUri = new Map<string, string>();
  const problems: string[] = [];
  for (const doc of docs) {
    const uri = (doc as StoredApp).descriptor?.uri;
    if (typeof uri !== 'string') continue;
    const first = byUri.get(uri);
    if (first !== undefined) problems.push(`apps ${JSON.stringify(first)} and ${JSON.stringify(doc._id)} are both served at ${graphqlPrefix}/${uri}; give each its own descriptor.uri`);
    else byUri.set(uri, doc._id);
  }
  // Tool names, across the set's enabled apps (each against the ones before it).
  const apps = docs as unknown as StoredApp[];
  apps.forEach((app, i) => {
    for (const clash of toolNameClashes(apps.slice(0, i), app)) problems.push(`app ${JSON.stringify(app._id)}: ${clash}`);
  });
  return problems;
}

/** The `apps` section of setup files; without a store it only validates (`outrigger check`). */
export function graphqlAppSetupKind(config: OutriggerConfig, store?: DocumentStore<StoredApp>): SetupKind {
  const validate = appValidator(config);
  return {
    section: 'apps',
    noun: 'GraphQL app',
    store: store as unknown as SetupKind['store'],
    validate: (candidate) => validate(candidate) as unknown as Validation<StoredDocument>,
    checkSet: (docs) => duplicateUris(docs, config.routes.graphql),
    warnings: (doc) => warningsOf(doc),
  };
}
