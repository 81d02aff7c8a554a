/** Shared pieces of every page: confirmation, times in the viewer's zone, errors, JSON, paging. */
import { h, type ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import htm from 'htm';
import { ApiError } from './api.js';

export const html = htm.bind(h);

export type EpochDate = { $date: number } | null | undefined;

const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
export const viewerZone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'local time';

/** A time in the viewer's zone, machine-readable in `datetime`. */
export function Time({ value }: { value: EpochDate | number }) {
  const ms = typeof value === 'number' ? value : value?.$date;
  if (ms === undefined || ms === null || !Number.isFinite(ms)) return html`<span class="muted">—</span>`;
  const date = new Date(ms);
  return html`<time datetime=${date.toISOString()}>${timeFormat.format(date)}</time>`;
}

export function errorText(error: unknown): string {
  if (error instanceof ApiError) return error.status ? `${error.message} (HTTP ${error.status})` : error.message;
  return error instanceof Error ? error.message : String(error);
}

/** An error where it happened, announced to screen readers. */
export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  return html`<div class="alert" role="alert">${errorText(error)}</div>`;
}

export function Json({ value, label }: { value: unknown; label?: string }) {
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  return html`<pre tabindex="0" aria-label=${label ?? 'JSON'}>${text ?? 'null'}</pre>`;
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return html`<div class="empty panel">
    <p><strong>${title}</strong></p>
    ${children}
  </div>`;
}

export function Pager({ page, pagesize, total, onPage, label }: { page: number; pagesize: number; total: number | null; onPage: (p: number) => void; label: string }) {
  if (!total || total <= pagesize) return null;
  const last = Math.max(1, Math.ceil(total / pagesize));
  const from = (page - 1) * pagesize + 1;
  const to = Math.min(total, page * pagesize);
  return html`<nav class="pager" aria-label=${`${label} pages`}>
    <span>${from}–${to} of ${total}</span>
    <button type="button" onClick=${() => onPage(page - 1)} disabled=${page <= 1}>Previous</button>
    <button type="button" onClick=${() => onPage(page + 1)} disabled=${page >= last}>Next</button>
  </nav>`;
}

// -------------------------------------------------------------------------------------------------
// Confirmation: one modal <dialog> (focus trapped by the browser, Escape cancels).

interface ConfirmRequest {
  title: string;
  body: ComponentChildren;
  action: string;
  resolve: (ok: boolean) => void;
}
let openConfirm: ((request: ConfirmRequest) => void) | null = null;

/** Asks before a destructive action; resolves true when the person confirmed. */
export function confirmAction(title: string, body: ComponentChildren, action: string): Promise<boolean> {
  return new Promise((resolve) => {
    if (!openConfirm) return resolve(window.confirm(title));
    openConfirm({ title, body, action, resolve });
  });
}

export function ConfirmHost() {
  const [request, setRequest] = useState<ConfirmRequest | null>(null);
  const dialog = useRef<HTMLDialogElement>(null);
  const returnFocus = useRef<Element | null>(null);
  useEffect(() => {
    openConfirm = (r) => {
      returnFocus.current = document.activeElement;
      setRequest(r);
    };
    return () => {
      openConfirm = null;
    };
  }, []);
  useEffect(() => {
    if (request && dialog.current && !dialog.current.open) dialog.current.showModal();
  }, [request]);
  const finish = (ok: boolean) => {
    const r = request;
    dialog.current?.close();
    setRequest(null);
    r?.resolve(ok);
    (returnFocus.current as HTMLElement | null)?.focus?.();
  };
  return html`<dialog ref=${dialog} aria-labelledby="confirm-title" onCancel=${(e: Event) => (e.preventDefault(), finish(false))}>
    ${
      request &&
      html`<h2 id="confirm-title">${request.title}</h2>
        <div>${request.body}</div>
        <div class="actions">
          <button type="button" onClick=${() => finish(false)} autofocus>Cancel</button>
          <button type="button" class="danger" onClick=${() => finish(true)}>${request.action}</button>
        </div>`
    }
  </dialog>`;
}

/** Loads something on mount and when `deps` change; `reload` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: unknown; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: null, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, error: null, loading: false }),
      (error: unknown) => live && setState((s) => ({ data: s.data, error, loading: false })),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

/** Moves focus to the page heading when a page opens, so keyboard and screen-reader users start there. */
export function PageTitle({ children }: { children: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    ref.current?.focus();
  }, []);
  return html`<h1 tabindex="-1" ref=${ref}>${children}</h1>`;
}
