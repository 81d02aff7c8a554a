// GraphiQL for one app, bundled by scripts/build-assets.mjs (no CDN). Served with the strict CSP:
// no inline script, so the endpoint (and the app's example, for a caller the ACL allowed) come
// from data attributes of the page's root element.
//
// An API key typed into the bar above GraphiQL stays in this tab's memory (a React state): never
// localStorage or sessionStorage, and GraphiQL is told not to persist its headers either
// (`shouldPersistHeaders: false`, which also hides its setting). With a key, requests carry only
// the key (`credentials: 'omit'`), so what runs is what the key's owner may run.
/* global document, fetch */
import { GraphiQL } from 'graphiql';
import { getOperationAST, parse } from 'graphql';
import { createClient } from 'graphql-sse';
import { createElement as h, useEffect, useMemo, useState } from 'react';
import { createRoot } from 'react-dom/client';
import 'graphiql/graphiql.css';
import './page.css';

const root = document.getElementById('graphiql');
const endpoint = root.dataset.endpoint;
const signedInExample = root.dataset.example ? JSON.parse(root.dataset.example) : undefined;
const ACCEPT = 'application/graphql-response+json, application/json';

function isSubscription(params) {
  try {
    return getOperationAST(parse(params.query), params.operationName || undefined)?.operation === 'subscription';
  } catch {
    return false;
  }
}

/** What a request made with `key` carries: the key alone, or the page's own credentials without one. */
function requestOptions(key) {
  return key ? { credentials: 'omit', headers: { authorization: `Bearer ${key}` } } : { credentials: 'same-origin', headers: {} };
}

/** GraphiQL's fetcher for a key (or none): JSON over POST, subscriptions over SSE (SPEC §6.5). */
function fetcherFor(key) {
  const own = requestOptions(key);
  let extra = {};
  const sse = createClient({ url: endpoint, credentials: own.credentials, headers: () => ({ ...extra, ...own.headers }), retryAttempts: 0 });
  return async (params, opts) => {
    // The Headers tab may add headers; the key, when given, is the one identity sent.
    extra = opts?.headers ?? {};
    if (isSubscription(params)) return sse.iterate(params);
    const res = await fetch(endpoint, {
      method: 'POST',
      credentials: own.credentials,
      headers: { ...extra, 'content-type': 'application/json', accept: ACCEPT, ...own.headers },
      body: JSON.stringify(params),
    });
    return res.json();
  };
}

/** The app's example for the key; the refusal's message when the ACL says no. */
async function loadExample(key) {
  const own = requestOptions(key);
  const res = await fetch(`${endpoint}?graphiql-example`, { credentials: own.credentials, headers: { accept: 'application/json', ...own.headers } });
  const body = await res.json().catch(() => ({}));
  if (res.ok) return { example: body };
  return { refused: body?.errors?.[0]?.message ?? body?.message ?? `refused (${res.status})` };
}

function KeyBar({ active, onUse, onForget, status }) {
  const [draft, setDraft] = useState('');
  const submit = (event) => {
    event.preventDefault();
    if (draft.trim() !== '') onUse(draft.trim());
    setDraft('');
  };
  return h(
    'form',
    { className: 'outrigger-key', onSubmit: submit },
    h('label', { htmlFor: 'outrigger-key-input' }, 'API key'),
    h('input', {
      id: 'outrigger-key-input',
      type: 'password',
      autoComplete: 'off',
      spellCheck: false,
      value: draft,
      placeholder: active ? 'a key is in use (kept in this tab only)' : 'paste a key: kept in this tab only',
      onChange: (e) => setDraft(e.target.value),
    }),
    h('button', { type: 'submit' }, 'Use key'),
    active ? h('button', { type: 'button', onClick: onForget }, 'Forget key') : null,
    active ? null : h('a', { href: `${endpoint}?graphiql-sign-in` }, 'sign in with a password'),
    h('span', { className: 'outrigger-key-status', role: 'status' }, status),
  );
}

function Page() {
  const [key, setKey] = useState('');
  const [example, setExample] = useState(signedInExample);
  const [status, setStatus] = useState(signedInExample ? '' : 'This app needs credentials: an API key, or a signed-in user it allows.');
  // A new identity opens a new GraphiQL (its schema fetched again with it), on the example.
  const [generation, setGeneration] = useState(0);
  const fetcher = useMemo(() => fetcherFor(key), [key]);

  useEffect(() => {
    if (!key) return;
    let current = true;
    loadExample(key).then(
      (answer) => {
        if (!current) return;
        if (answer.example) {
          setExample(answer.example);
          setStatus('Running with the key.');
          setGeneration((n) => n + 1);
        } else {
          setKey('');
          setStatus(`The key was refused: ${answer.refused}`);
        }
      },
      () => current && setStatus('Could not reach the server.'),
    );
    return () => {
      current = false;
    };
  }, [key]);

  const forget = () => {
    setKey('');
    setExample(signedInExample);
    setStatus(signedInExample ? '' : 'Key forgotten.');
    setGeneration((n) => n + 1);
  };
  return h(
    'div',
    { className: 'outrigger-page' },
    h(KeyBar, { active: key !== '', onUse: setKey, onForget: forget, status }),
    // No identity yet: GraphiQL would fetch the schema anonymously, and the 401 would make the browser ask for a password.
    example === undefined
      ? h('p', { className: 'outrigger-waiting' }, 'Paste an API key above and press "Use key" to open this app with it, or sign in with a user id and password.')
      : h(
          'div',
          { className: 'outrigger-graphiql' },
          h(GraphiQL, {
            key: generation,
            fetcher,
            query: example.query,
            ...(example.variables ? { variables: JSON.stringify(example.variables, null, 2) } : {}),
            ...(example.operationName ? { operationName: example.operationName } : {}),
            shouldPersistHeaders: false,
            defaultEditorToolsVisibility: Boolean(example.variables),
          }),
        ),
  );
}

createRoot(root).render(h(Page));
