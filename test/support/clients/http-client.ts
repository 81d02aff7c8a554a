import { request } from 'undici';

export interface CallResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body parsed as JSON; undefined when it is empty or not JSON. */
  json: any;
}

export interface CallOptions {
  method?: string;
  auth?: string;
  /** Sent as JSON (a string is sent as is), with content-type application/json. */
  body?: unknown;
  /** Sent exactly as given, with no content-type added. */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
}

/** One request through a running Outrigger (or any server), its answer read whole. */
export async function call(base: string, path: string, init: CallOptions = {}): Promise<CallResult> {
  const res = await request(`${base}${path}`, {
    method: (init.method ?? 'GET') as 'GET',
    headers: {
      ...(init.auth ? { authorization: init.auth } : {}),
      ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...init.headers,
    },
    body: init.rawBody ?? (init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body)),
  });
  const text = await res.body.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers as CallResult['headers'], text, json };
}
