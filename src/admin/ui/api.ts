/**
 * The only place the console talks to Outrigger: the documented HTTP API, same origin, with the
 * Basic credentials held in this module's memory (never localStorage, never a cookie). Requests
 * omit the browser's own credentials, so a 401 never opens the browser's sign-in prompt.
 */

/** Where the console is mounted (`routes.admin`, e.g. /_admin): the page's own path without the trailing slash. */
export const adminBase = location.pathname.replace(/\/(index\.html)?$/, '');

let authorization: string | null = null;
let onSignedOut: ((message: string) => void) | null = null;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
  /** The validation problems of a 400 (`a; b; c`), one per field. */
  get problems(): string[] {
    return this.status === 400 ? this.message.split('; ') : [];
  }
}

export interface ApiAnswer<T> {
  status: number;
  data: T;
  total: number | null;
}

export function setCredentials(user: string, password: string): void {
  // btoa needs Latin-1; encode UTF-8 first so any password works.
  const bytes = new TextEncoder().encode(`${user}:${password}`);
  authorization = `Basic ${btoa(String.fromCharCode(...bytes))}`;
}

export function signOut(): void {
  authorization = null;
}

export function whenSignedOut(callback: (message: string) => void): void {
  onSignedOut = callback;
}

export async function api<T = unknown>(method: string, path: string, body?: unknown, options: { signInCheck?: boolean } = {}): Promise<ApiAnswer<T>> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (authorization) headers.authorization = authorization;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', cache: 'no-store', redirect: 'error' });
  } catch {
    throw new ApiError(0, 'Outrigger cannot be reached. Check that it is running, then try again.');
  }
  const text = await res.text();
  let data: unknown = undefined;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = text;
  }
  if (!res.ok) {
    const message =
      (data && typeof data === 'object' && typeof (data as { message?: unknown }).message === 'string' ? (data as { message: string }).message : null) ?? `${res.status} ${res.statusText}`;
    if (res.status === 401 && !options.signInCheck && authorization) {
      authorization = null;
      onSignedOut?.('Your sign-in is no longer accepted (the password may have changed). Sign in again.');
    }
    throw new ApiError(res.status, message);
  }
  const total = res.headers.get('x-total-count');
  return { status: res.status, data: data as T, total: total === null ? null : Number(total) };
}

export const admin = (path: string) => `${adminBase}${path}`;

/** Where a user's own keys live (`routes.keys`): the console route writes it into the page. */
export const keysBase = document.querySelector('meta[name="outrigger-keys-route"]')?.getAttribute('content') || '/keys';
/** A path under the owner's keys route (SPEC §5.2: Basic, the caller's own keys). */
export const own = (path: string) => `${keysBase}${path}`;
export const enc = encodeURIComponent;
