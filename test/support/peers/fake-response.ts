import type { IncomingMessage, ServerResponse } from 'node:http';

/** What a fake response was given: the status, the head and the body. */
export interface SentAnswer {
  status?: number;
  headers?: Record<string, unknown>;
  body?: string;
}

/**
 * A ServerResponse stand-in for the unit rows of `sendError` (src/http/respond.ts): it records
 * the head and the body it is given. With `req`, the request it answers (what respond.ts reads of
 * it: the Accept header, whether the body was read whole).
 */
export function fakeResponse(req?: IncomingMessage): { res: ServerResponse; sent: SentAnswer } {
  const sent: SentAnswer = {};
  const res = {
    headersSent: false,
    destroyed: false,
    req,
    writeHead(status: number, headers: Record<string, unknown>) {
      sent.status = status;
      sent.headers = headers;
      return res;
    },
    end(body: string) {
      sent.body = body;
    },
  } as unknown as ServerResponse;
  return { res, sent };
}
