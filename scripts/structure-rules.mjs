// The layout the house keeps (checked by scripts/check-structure.mjs, run by `npm run lint`).
// docs/architecture.md draws it; each folder's README says what it owns.

/**
 * The top folders (and root files) of src/, from the ground up. A file may import its own folder
 * and the layers strictly below; never a layer above, and never another folder of its own layer.
 *
 * Why strict (one rule, no same-layer imports) rather than "same-layer imports allowed while they
 * form no loop": with peers forbidden to import each other, a loop between folders cannot be
 * written at all (it needs an arrow up or sideways), and the table itself reads as the order in
 * which the house is built. When one peer comes to need another, it gets a row of its own above
 * it; that move is the record of the new dependency. test/unit/structure proves a folder loop and
 * an upward import in a fixture tree fail.
 */
export const LAYERS = [
  // principal: a leaf (imports nothing) so transport, stores and features can name who a request runs as.
  ['errors', 'util', 'principal'],
  ['net', 'input-limits', 'condition'],
  ['config'],
  // The ground the request path stands on: Redis, upstream connections, logs/metrics/traces.
  ['store', 'proxy', 'observability'],
  // The transport: server, scope, bodies, responses, own-route table.
  ['http'],
  // Built on the transport, independent of each other: identity and access decisions, rate
  // limits, feature flags, the operator's routes (admin API, console, health, metrics), the
  // response cache (the chain's cache stage and GraphQL's backend reads use it).
  ['access', 'limits', 'features', 'admin', 'cache', 'idempotency'],
  // The request chain's stages in order (src/chain/README.md), over the transport and the
  // decisions they call; features import its observer contract and condition view.
  ['chain'],
  // The shared parts every feature module is built from (made of access, limits, features).
  ['app-context'],
  // Setup files: applied with a context; the permissions section is the house's own.
  ['setup'],
  ['feature-module'],
  ['keys', 'webhooks'],
  ['oauth', 'graphql'],
  // Tools for agents: call the GraphQL door as a client would, behind the sign-in's challenge.
  ['mcp'],
  // The process's own sequences over every part: its stop, and its reload (what can change live).
  ['feature-list', 'offline-setup-kinds', 'shutdown', 'reload'],
  ['app'],
  ['cli'],
];

/**
 * Features laid out by stage, in the order the data flows. A file in a stage may import the
 * stages before it and the shared files at the feature's root; only `entry` (the module that
 * wires the stages) may import every stage, and no stage imports it.
 */
export const STAGED_FEATURES = {
  // template before documents: a document's templates are checked when it is written.
  // logs before deliver: the worker writes entries through the log store.
  webhooks: Object.assign(['template', 'documents', 'capture', 'logs', 'deliver', 'routes'], { entry: 'module.ts' }),
  // values first: extended JSON, paths, local matching and $arg/$fk substitution, read by every stage.
  // schema before document: a document's mappings are checked against the schema its SDL builds.
  // reads before compile: compiling installs the resolvers that read; the reads know no compiled app.
  // ui stays a folder of its own (scripts/build-assets.mjs bundles it from there), served by serve/.
  // subscribe after compile: a subscription runs its selection on a compiled app; serve hands it SSE requests.
  graphql: Object.assign(['values', 'schema', 'document', 'backend', 'reads', 'writes', 'limits', 'compile', 'subscribe', 'ui', 'serve'], { entry: 'module.ts' }),
  // clients before sign-in: /authorize looks the client up.
  oauth: Object.assign(['clients', 'sign-in'], { entry: 'module.ts' }),
};

/** The one folder allowed to run Redis scripts (EVAL, EVALSHA, SCRIPT LOAD). */
export const SCRIPT_HOME = 'src/store';

export const LIMITS = { fileLines: 400, folderFiles: 15 };
