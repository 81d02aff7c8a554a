/**
 * Response helpers and body reading. Every error the stand-in produces uses RESTHeart's error body,
 * `{"http status code", "http status description", "message"}`, so a proxy sees what it would see
 * in front of the real thing.
 */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';

export type Headers = Record<string, string | string[]>;

/** RESTHeart rejects bodies over its configured limit; 16 MiB is MongoDB's document limit. */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** An expected failure of a request: becomes a RESTHeart error response. */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Headers = {},
  ) {
    super(message);
  }
}

export function errorBody(status: number, message: string): Record<string, unknown> {
  return {
    'http status code': status,
    'http status description': STATUS_CODES[status] ?? 'Error',
    message,
  };
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Headers = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** Writes answer with no body, as RESTHeart's do (no content type either: there is no content). */
export function sendEmpty(res: ServerResponse, status: number, headers: Headers = {}): void {
  res.writeHead(status, { ...headers, 'content-length': 0 });
  res.end();
}

export function sendProblem(res: ServerResponse, problem: HttpProblem): void {
  sendJson(res, problem.status, errorBody(problem.status, problem.message), problem.headers);
}

/** The whole body as UTF-8 text, or undefined when there is none. */
export async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      throw new HttpProblem(413, `request body is larger than ${MAX_BODY_BYTES} bytes; send a smaller document`);
    }
    chunks.push(chunk);
  }
  return size === 0 ? undefined : Buffer.concat(chunks).toString('utf8');
}

/** `application/json` and the `+json` family (merge-patch, problem…) count as JSON. */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const mediaType = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  return mediaType === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(mediaType);
}
