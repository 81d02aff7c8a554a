/** Shared helpers for the stand-in's own tests: real server, real HTTP over loopback. */
import { SignJWT, type JWTPayload } from 'jose';
import { expect } from 'vitest';

export function basic(id: string, password: string): string {
  return `Basic ${Buffer.from(`${id}:${password}`).toString('base64')}`;
}

/** GET `url` with query parameters given as pairs, so a parameter can repeat. */
export function withQuery(url: string, params: Array<[string, string]>): string {
  const search = new URLSearchParams(params).toString();
  return search ? `${url}?${search}` : url;
}

export async function getJson(url: string, init: RequestInit = {}): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

export function sendJsonBody(method: string, body: unknown, headers: Record<string, string> = {}): RequestInit {
  return { method, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) };
}

export async function signJwt(secret: string, claims: JWTPayload, options: { alg?: string; sub?: string; expiresIn?: string | number } = {}): Promise<string> {
  let builder = new SignJWT(claims).setProtectedHeader({ alg: options.alg ?? 'HS256' }).setIssuedAt();
  if (options.sub !== undefined) builder = builder.setSubject(options.sub);
  if (options.expiresIn !== undefined) builder = builder.setExpirationTime(options.expiresIn);
  return builder.sign(new TextEncoder().encode(secret));
}

/** RESTHeart's error body: status code, reason phrase and a message. */
export function expectRestheartError(body: any, status: number): void {
  expect(body).toMatchObject({
    'http status code': status,
    'http status description': expect.any(String),
    message: expect.any(String),
  });
}
