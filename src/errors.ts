/**
 * The one error type Outrigger raises on purpose. `code` is stable (clients and tests may match
 * on it), `status` is the HTTP status it maps to, and `message` is written for the person who
 * must fix the problem. `http/respond.ts` is the only place that turns it into a response.
 */
export class OutriggerError extends Error {
  readonly code: string;
  readonly status: number;
  readonly headers: Record<string, string> | undefined;

  constructor(status: number, code: string, message: string, headers?: Record<string, string>) {
    super(message);
    this.name = 'OutriggerError';
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

export const badRequest = (message: string, code = 'BAD_REQUEST') => new OutriggerError(400, code, message);
export const unauthorized = (message: string, headers?: Record<string, string>, code = 'UNAUTHENTICATED') => new OutriggerError(401, code, message, headers);
export const forbidden = (message: string, code = 'FORBIDDEN') => new OutriggerError(403, code, message);
export const notFound = (message: string, code = 'NOT_FOUND') => new OutriggerError(404, code, message);
export const methodNotAllowed = (allowed: string[]) =>
  new OutriggerError(405, 'METHOD_NOT_ALLOWED', `method not allowed here; use ${allowed.join(', ')}`, {
    allow: allowed.join(', '),
  });
export const conflict = (message: string, code = 'CONFLICT') => new OutriggerError(409, code, message);
export const payloadTooLarge = (message: string) => new OutriggerError(413, 'PAYLOAD_TOO_LARGE', message);
export const unsupportedMediaType = (message: string) => new OutriggerError(415, 'UNSUPPORTED_MEDIA_TYPE', message);
export const tooManyRequests = (message: string, retryAfterSeconds: number) =>
  new OutriggerError(429, 'TOO_MANY_REQUESTS', message, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
export const serviceUnavailable = (message: string, code = 'UNAVAILABLE') => new OutriggerError(503, code, message);

/** A validation result that lists every problem at once, each as `path: problem` or a sentence naming the path. */
export class ValidationError extends OutriggerError {
  readonly problems: string[];
  constructor(problems: string[], status = 400) {
    super(status, 'INVALID', problems.join('; '));
    this.problems = problems;
  }
}

/**
 * An error of the OAuth endpoints (`/token`, `/register`): answered with RFC 6749 §5.2's body
 * `{error, error_description}` (what OAuth clients parse) instead of RESTHeart's.
 */
export class OAuthProtocolError extends OutriggerError {
  constructor(
    status: number,
    readonly oauthError: string,
    message: string,
    headers?: Record<string, string>,
  ) {
    super(status, `OAUTH_${oauthError.toUpperCase()}`, message, headers);
  }
}
