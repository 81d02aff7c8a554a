import { badRequest, unsupportedMediaType } from '../errors.js';
import { readBody } from '../http/body.js';
import type { RequestScope } from '../http/scope.js';

const FORM = /^application\/x-www-form-urlencoded\s*(;|$)/i;

/** An `application/x-www-form-urlencoded` body (the pages' forms and RFC 6749's token request). */
export async function readForm(scope: RequestScope, limit = 16 * 1024): Promise<URLSearchParams> {
  const type = scope.req.headers['content-type'];
  if (!type || !FORM.test(type)) throw unsupportedMediaType(`send the body as application/x-www-form-urlencoded (got ${type ?? 'no content type'})`);
  const body = await readBody(scope, limit);
  return new URLSearchParams(body.toString('utf8'));
}

/** A parameter that must appear at most once (RFC 6749 §3.1: repeated parameters are an error). */
export function single(params: URLSearchParams, name: string): string | null {
  const values = params.getAll(name);
  if (values.length > 1) throw badRequest(`the parameter ${name} is repeated; send it once`);
  return values[0] ?? null;
}
