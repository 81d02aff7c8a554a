/**
 * The webhook form's data, apart from its markup: the form's state from a stored webhook, the
 * document the API takes from the form, and the API's problems sorted under the fields they name.
 */
import { ApiError } from './api.js';
import type { Webhook } from './webhook-parts.js';
import { errorText } from './ui.js';

export interface FormState {
  type: 'http' | 'email';
  name: string;
  condition: string;
  enabled: boolean;
  url: string;
  timeout: string;
  headers: string;
  transformEnabled: boolean;
  template: string;
  to: string;
  cc: string;
  subject: string;
  bodyType: 'json' | 'html';
  bodyTemplate: string;
  maxPerSecond: string;
  retrySchedule: string;
}

/** The form's first state: the stored webhook's, or a new one's (its condition `prefill`, when one is given). */
export function initialState(webhook: Webhook | null, prefill: string | null): FormState {
  return {
    type: webhook?.type ?? 'http',
    name: webhook?.name ?? '',
    condition: webhook?.condition ?? prefill ?? '',
    enabled: webhook?.enabled ?? true,
    url: webhook?.url ?? '',
    timeout: String(webhook?.timeout_ms ?? 5000),
    headers: Object.entries(webhook?.headers ?? {})
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n'),
    transformEnabled: webhook?.transform?.enabled ?? false,
    template: webhook?.transform?.template ?? '',
    to: (webhook?.email?.to ?? []).join(', '),
    cc: (webhook?.email?.cc ?? []).join(', '),
    subject: webhook?.email?.subject ?? '',
    bodyType: webhook?.email?.bodyType ?? 'html',
    bodyTemplate: webhook?.email?.bodyTemplate ?? '',
    maxPerSecond: webhook?.maxPerSecond === undefined ? '' : String(webhook.maxPerSecond),
    retrySchedule: webhook?.retrySchedule === undefined ? '' : webhook.retrySchedule.length === 0 ? 'none' : webhook.retrySchedule.join(', '),
  };
}

function list(text: string): string[] {
  return text
    .split(/[,\s]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** What the form edits; every other field of a stored webhook (its secret, ...) is kept as it is. */
const FORM_FIELDS = ['_id', 'name', 'type', 'condition', 'enabled', 'url', 'timeout_ms', 'headers', 'transform', 'email', 'maxPerSecond', 'retrySchedule', 'createdAt', 'updatedAt'];

/**
 * The retry schedule as typed: empty for the service's schedule, "none" for no retries, else
 * delays separated by commas (a bare number is seconds, as the API takes it). The API checks
 * each delay and its problems show under the field.
 */
function retryScheduleOf(text: string): Array<number | string> | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  if (trimmed.toLowerCase() === 'none') return [];
  return list(trimmed).map((d) => (/^\d+(\.\d+)?$/.test(d) ? Number(d) : d));
}

/** The document the API takes, from the form; `headers` lines that are not `Name: value` are reported. */
export function documentOf(s: FormState, stored: Webhook | null): { doc: Record<string, unknown>; problem: string | null } {
  const kept = Object.fromEntries(Object.entries(stored ?? {}).filter(([k]) => !FORM_FIELDS.includes(k)));
  const doc: Record<string, unknown> = { ...kept, ...(stored ? { _id: stored._id } : {}), name: s.name, type: s.type, condition: s.condition, enabled: s.enabled };
  // A bad number goes to the API as typed (NaN would be sent as null), so its problem names the field.
  if (s.maxPerSecond.trim() !== '') doc.maxPerSecond = Number.isFinite(Number(s.maxPerSecond)) ? Number(s.maxPerSecond) : s.maxPerSecond;
  const schedule = retryScheduleOf(s.retrySchedule);
  if (schedule) doc.retrySchedule = schedule;
  if (s.type === 'http') {
    doc.url = s.url;
    if (s.timeout.trim() !== '') doc.timeout_ms = Number(s.timeout);
    const headers: Record<string, string> = {};
    for (const line of s.headers.split('\n')) {
      if (line.trim() === '') continue;
      const colon = line.indexOf(':');
      if (colon <= 0) return { doc, problem: `headers: "${line.trim()}" is not "Name: value"` };
      headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
    }
    if (Object.keys(headers).length) doc.headers = headers;
    if (s.transformEnabled || s.template) doc.transform = { enabled: s.transformEnabled, ...(s.template ? { template: s.template } : {}) };
  } else {
    const cc = list(s.cc);
    doc.email = { to: list(s.to), ...(cc.length ? { cc } : {}), subject: s.subject, bodyType: s.bodyType, bodyTemplate: s.bodyTemplate };
  }
  return { doc, problem: null };
}

const FIELDS = [
  'name',
  'condition',
  'url',
  'timeout_ms',
  'headers',
  'transform',
  'email.to',
  'email.cc',
  'email.subject',
  'email.bodyType',
  'email.bodyTemplate',
  'enabled',
  'maxPerSecond',
  'retrySchedule',
];

/** Sorts the API's problems (`field ...; other ...`) under the fields they name; the rest go on top. */
export function problemsByField(error: unknown): { fields: Record<string, string[]>; general: string[] } {
  const fields: Record<string, string[]> = {};
  const general: string[] = [];
  if (!(error instanceof ApiError) || error.status !== 400) return { fields, general: error ? [errorText(error)] : [] };
  for (const raw of error.problems) {
    const problem = raw.replace(/^webhook\./, '');
    const field = FIELDS.filter((f) => problem === f || problem.startsWith(`${f} `) || problem.startsWith(`${f}:`) || problem.startsWith(`${f}.`) || problem.startsWith(`${f}[`)).sort(
      (a, b) => b.length - a.length,
    )[0];
    if (field) (fields[field] ??= []).push(problem);
    else general.push(problem);
  }
  return { fields, general };
}
