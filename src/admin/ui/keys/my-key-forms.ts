/**
 * The forms of "Your API keys": issue a key, rotate one (the grace the old key keeps, 0 to 168
 * hours), and the new secret, shown once. The server checks everything again and its refusals
 * (roles not offered, the key limit, a grace beyond 7 days) are shown as it words them.
 */
import { useState } from 'preact/hooks';
import { api, enc, own } from '../api.js';
import { ErrorBox, html, Time, type EpochDate } from '../ui.js';

/** What `POST /keys` and a rotation answer: the only time `key` is ever seen. */
export interface IssuedKey {
  _id: string;
  name: string;
  roles: string[];
  expiresAt: EpochDate;
  key: string;
}

const MAX_GRACE_HOURS = 168;
const value = (e: Event) => (e.target as HTMLInputElement).value;

export function IssueForm({ onIssued }: { onIssued: (issued: IssuedKey) => void }) {
  const [name, setName] = useState('');
  const [roles, setRoles] = useState('');
  const [days, setDays] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const body = {
      name: name.trim(),
      roles: roles
        .split(',')
        .map((r) => r.trim())
        .filter(Boolean),
      ...(days.trim() ? { expiresIn: Number(days) } : {}),
    };
    try {
      const answer = await api<IssuedKey>('POST', own(''), body);
      setName('');
      setRoles('');
      setDays('');
      onIssued(answer.data);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="panel" onSubmit=${submit} aria-labelledby="issue-title">
    <h2 id="issue-title">Issue a key</h2>
    <div class="grid3">
      <div>
        <label for="issue-name">Name</label>
        <input id="issue-name" type="text" required maxlength="100" value=${name} onInput=${(e: Event) => setName(value(e))} placeholder="ci-deploy" />
      </div>
      <div>
        <label for="issue-roles">Roles</label>
        <input id="issue-roles" type="text" value=${roles} onInput=${(e: Event) => setRoles(value(e))} aria-describedby="issue-roles-hint" placeholder="reader" />
        <p class="hint" id="issue-roles-hint">Comma-separated; empty for none. Only roles your permission offers for keys.</p>
      </div>
      <div>
        <label for="issue-days">Expires in (days)</label>
        <input id="issue-days" type="number" min="1" step="1" value=${days} onInput=${(e: Event) => setDays(value(e))} aria-describedby="issue-days-hint" />
        <p class="hint" id="issue-days-hint">Empty: 90 days, or your maximum if lower.</p>
      </div>
    </div>
    <${ErrorBox} error=${error} />
    <button class="primary" type="submit" disabled=${busy}>${busy ? 'Issuing…' : 'Issue key'}</button>
  </form>`;
}

export function RotateForm({ keyId, keyName, onRotated, onCancel }: { keyId: string; keyName: string; onRotated: (issued: IssuedKey) => void; onCancel: () => void }) {
  const [hours, setHours] = useState('24');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const id = `grace-${keyId}`;
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const answer = await api<IssuedKey>('POST', own(`/${enc(keyId)}/rotate`), { graceHours: Number(hours) });
      onRotated(answer.data);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="rotate" onSubmit=${submit} aria-label=${`Rotate ${keyName}`}>
    <p>A new key replaces <strong>${keyName}</strong>, with its name, roles and lifetime. The old key keeps working for the grace period, then stops.</p>
    <label for=${id}>Old key keeps working for (hours)</label>
    <div class="row">
      <input id=${id} type="number" min="0" max=${MAX_GRACE_HOURS} step="any" required value=${hours} onInput=${(e: Event) => setHours(value(e))} aria-describedby=${`${id}-hint`} />
      <button class="primary" type="submit" disabled=${busy}>${busy ? 'Rotating…' : 'Rotate'}</button>
      <button type="button" onClick=${onCancel}>Cancel</button>
    </div>
    <p class="hint" id=${`${id}-hint`}>0 stops it at once; at most ${MAX_GRACE_HOURS} (7 days).</p>
    <${ErrorBox} error=${error} />
  </form>`;
}

/** The new secret, once: it is not stored anywhere Outrigger could show it again. */
export function SecretOnce({ issued, how, onDone }: { issued: IssuedKey; how: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(issued.key);
      setCopied(true);
    } catch {
      // Without clipboard access (a plain-HTTP origin), select it for a manual copy.
      (document.getElementById('new-key') as HTMLInputElement | null)?.select();
    }
  };
  return html`<section class="warning secret" aria-labelledby="secret-title">
    <h2 id="secret-title" tabindex="-1" ref=${(el: HTMLElement | null) => el?.focus()}>Copy your new key now</h2>
    <p>
      Key <strong>${issued.name}</strong> (${how}), valid until <${Time} value=${issued.expiresAt} />. This is the only time it is shown: Outrigger keeps only its hash.
    </p>
    <label for="new-key">Your new key</label>
    <div class="row">
      <input id="new-key" class="code grow" type="text" readonly value=${issued.key} onFocus=${(e: Event) => (e.target as HTMLInputElement).select()} />
      <button type="button" onClick=${copy}>${copied ? 'Copied' : 'Copy'}</button>
      <button type="button" class="primary" onClick=${onDone}>Done</button>
    </div>
  </section>`;
}
