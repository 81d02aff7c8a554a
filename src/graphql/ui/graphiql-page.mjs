// GraphiQL for one app, bundled by scripts/build-assets.mjs (no CDN). Served with the strict CSP:
// no inline script, so the endpoint comes from a data attribute of the page's root element.
/* global document, fetch */
import { GraphiQL } from 'graphiql';
import { createElement } from 'react';
import { createRoot } from 'react-dom/client';
import 'graphiql/graphiql.css';
import './page.css';

const root = document.getElementById('graphiql');
const endpoint = root.dataset.endpoint;

async function fetcher(params) {
  const res = await fetch(endpoint, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' },
    body: JSON.stringify(params),
  });
  return res.json();
}

createRoot(root).render(createElement(GraphiQL, { fetcher, defaultEditorToolsVisibility: false }));
