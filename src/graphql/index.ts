/** The GraphQL engine: what the server wires into its route table. */
export { validateAppDocument, type AppValidation, type ValidateAppOptions } from './validate-app.js';
export {
  normalizeUri,
  matchAppUri,
  type GraphqlApp,
  type GraphqlAppDescriptor,
  type FieldMapping,
  type QueryMapping,
} from './app-document.js';
export { compileApp, appVersion, type CompiledApp, type CompileOptions } from './compile-app.js';
export { GraphqlAppRegistry, findUriConflict, type AppLookup, type RegistryOptions } from './registry.js';
export { executeGraphql, type GraphqlParams, type GraphqlOutcome, type GraphqlResponseBody } from './execute.js';
export { handleGraphqlHttp, negotiate, type GraphqlHttpInput, type GraphqlHttpResponse } from './http-handler.js';
export {
  createHttpBackendReader,
  encodeQueryComponent,
  type HttpBackendReader,
  type HttpBackendReaderOptions,
} from './backend-reader.js';
export {
  DEFAULT_LIMITS,
  MAX_BODY_BYTES,
  MAX_QUERY_BYTES,
  BACKEND_MAX_PAGESIZE,
  type BackendRead,
  type BackendReader,
  type GraphqlLimits,
  type RequestContext,
  type ReadDecision,
  type ReadPolicy,
} from './types.js';
