/**
 * The variables a webhook template sees for one event (the list is in render.ts's header).
 * Header maps are looked up case-insensitively: render.ts asks `isHeaderMap`.
 */
import type { CapturedEvent, CapturedHeaders } from '../event.js';
import type { WebhookRef } from '../webhook.js';

/** Objects whose keys are lower-case header names and are looked up case-insensitively. */
const headerObjects = new WeakSet<object>();

/** A header map for a template view: lower-case names, repeated values joined with ", ". */
function templateHeaders(headers: CapturedHeaders | Record<string, string | string[] | undefined>): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const key = name.toLowerCase();
    const text = Array.isArray(value) ? value.join(', ') : String(value);
    out[key] = key in out ? `${out[key]}, ${text}` : text;
  }
  headerObjects.add(out);
  return out;
}

interface TemplateView {
  id: string;
  timestamp: string;
  service: { id: string };
  webhook?: { id: string; name: string };
  request: {
    method: string;
    path: string;
    query: Record<string, string | string[]>;
    headers: Record<string, string>;
    body: unknown;
    bodyTruncated: boolean;
    /** A backend write a GraphQL mutation made (SPEC §6.4): `graphql`, with its app and operation. */
    via?: 'graphql';
    graphql?: { app: string; operation: string | null };
  };
  response: { statusCode: number; headers: Record<string, string>; body: unknown; bodyTruncated: boolean };
}

/** The variables a webhook template sees for one event. */
export function buildTemplateView(event: CapturedEvent, webhook?: WebhookRef): TemplateView {
  return {
    id: event.id,
    timestamp: new Date(event.timestamp).toISOString(),
    service: { id: event.serviceId },
    ...(webhook ? { webhook: { id: webhook.id, name: webhook.name } } : {}),
    request: {
      method: event.request.method,
      path: event.request.path,
      query: event.request.query,
      headers: templateHeaders(event.request.headers),
      body: event.request.body === undefined ? null : event.request.body,
      bodyTruncated: event.request.bodyTruncated,
      ...(event.request.via ? { via: event.request.via } : {}),
      ...(event.request.graphql ? { graphql: event.request.graphql } : {}),
    },
    response: {
      statusCode: event.response.statusCode,
      headers: templateHeaders(event.response.headers),
      body: event.response.body === undefined ? null : event.response.body,
      bodyTruncated: event.response.bodyTruncated,
    },
  };
}

/** Whether `value` is a header map of a view (its names are matched in any case). */
export function isHeaderMap(value: object): boolean {
  return headerObjects.has(value);
}
