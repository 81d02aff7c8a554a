// The layout the house keeps (checked by scripts/check-structure.mjs, run by `npm run lint`).
// docs/architecture.md draws it; each folder's README says what it owns.

/**
 * The top folders (and root files) of src/, from the ground up. A file may import its own
 * folder, any folder of the same layer, and the layers below; never a layer above.
 */
export const LAYERS = [
  // principal: a leaf (imports nothing) so transport, stores and features can name who a request runs as.
  ['errors', 'util', 'principal'],
  ['net', 'input-limits', 'condition', 'config'],
  ['store', 'proxy'],
  // The request chain: transport, identity and access decisions, the operator's view.
  ['http', 'access', 'limits', 'observability', 'features', 'admin', 'setup', 'app-context'],
  // The request chain's stages in order (src/chain/README.md), over the transport and the decisions they call.
  ['chain'],
  ['feature-module'],
  ['keys', 'webhooks'],
  ['oauth', 'graphql'],
  // Tools for agents: call the GraphQL door as a client would, behind the sign-in's challenge.
  ['mcp'],
  ['feature-list', 'offline-setup-kinds', 'shutdown', 'app', 'main'],
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
