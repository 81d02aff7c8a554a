// GraphiQL for one app, bundled by scripts/build-assets.mjs (no CDN). Served with the strict CSP:
// no inline script, so the endpoint comes from a data attribute of the page's root element.
/* global document, fetch */
import { GraphiQL } from 'graphiql';
import { getOperationAST, parse } from 'graphql';
import { createClient } from 'graphql-sse';
import { createElement } from 'react';
import { createRoot } from 'react-dom/client';
import 'graphiql/graphiql.css';
import './page.css';

const root = document.getElementById('graphiql');
const endpoint = root.dataset.endpoint;

// Subscriptions run over GraphQL over SSE on the same path (SPEC §6.5), with the page's credentials.
const sse = createClient({ url: endpoint, credentials: 'same-origin', retryAttempts: 0 });

function isSubscription(params) {
  try {
    return getOperationAST(parse(params.query), params.operationName || undefined)?.operation === 'subscription';
  } catch {
    return false;
  }
}

async function fetcher(params) {
  if (isSubscription(params)) return sse.iterate(params);
  const res = await fetch(endpoint, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' },
    body: JSON.stringify(params),
  });
  return res.json();
}

createRoot(root).render(createElement(GraphiQL, { fetcher, defaultEditorToolsVisibility: false }));
