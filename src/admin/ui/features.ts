/** Features (SPEC §5.5): a badge per feature and the actions that apply; Uninstall asks first and says nothing is deleted. */
import { useState } from 'preact/hooks';
import { admin, api, enc } from './api.js';
import { confirmAction, ErrorBox, html, PageTitle, useLoad } from './ui.js';

interface Feature {
  name: string;
  state: 'not-installed' | 'enabled' | 'disabled';
}

const ABOUT: Record<string, { title: string; text: string; keeps: string }> = {
  'api-keys': {
    title: 'API keys',
    text: 'Long-lived, revocable keys users issue to themselves (POST /keys) and send as Bearer tokens.',
    keeps: 'keys, permissions and limits',
  },
  webhooks: {
    title: 'Webhooks',
    text: 'HTTP POSTs and emails fired by requests that match a condition, with retries and logs.',
    keeps: 'webhooks, logs and queued events',
  },
};

const LABEL: Record<Feature['state'], string> = { 'not-installed': 'Not installed', enabled: 'Enabled', disabled: 'Disabled' };
const ACTIONS: Record<Feature['state'], Array<'install' | 'enable' | 'disable' | 'uninstall'>> = {
  'not-installed': ['install'],
  enabled: ['disable', 'uninstall'],
  disabled: ['enable', 'uninstall'],
};

function FeatureCard({ feature, onChanged }: { feature: Feature; onChanged: (f: Feature) => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const about = ABOUT[feature.name] ?? { title: feature.name, text: '', keeps: 'its data' };
  const act = async (action: string) => {
    if (action === 'uninstall') {
      const ok = await confirmAction(
        `Uninstall ${about.title}?`,
        html`<p>${about.title} stop working at once on every replica${feature.name === 'api-keys' ? ': no key authenticates and POST /keys answers 403' : ': nothing fires'}.</p>
          <p><strong>Nothing is deleted:</strong> installing again finds the ${about.keeps} as they were.</p>`,
        'Uninstall',
      );
      if (!ok) return;
    }
    setBusy(true);
    setError(null);
    try {
      const res = await api<Feature>('POST', admin(`/features/${enc(feature.name)}/${action}`));
      onChanged(res.data);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const headingId = `feature-${feature.name}`;
  return html`<li class="card" aria-labelledby=${headingId}>
    <div class="head">
      <h2 class="title" id=${headingId} style="margin:0">${about.title}</h2>
      <span class=${`badge ${feature.state}`} aria-label=${`State: ${LABEL[feature.state]}`}>${LABEL[feature.state]}</span>
    </div>
    <p class="muted">${about.text}</p>
    <div class="row">
      ${ACTIONS[feature.state].map(
        (a) =>
          html`<button type="button" class=${a === 'uninstall' ? 'danger' : a === 'install' || a === 'enable' ? 'primary' : ''} disabled=${busy} onClick=${() => act(a)}>
            ${a[0]!.toUpperCase() + a.slice(1)}<span class="visually-hidden"> ${about.title}</span>
          </button>`,
      )}
    </div>
    <${ErrorBox} error=${error} />
  </li>`;
}

export function FeaturesPage() {
  const features = useLoad(() => api<Feature[]>('GET', admin('/features')), []);
  const [changed, setChanged] = useState<Record<string, Feature>>({});
  const list = (features.data?.data ?? []).map((f) => changed[f.name] ?? f);
  return html`<main id="main">
    <${PageTitle}>Features<//>
    <p class="muted">Turn API keys and webhooks on or off for this service. The state lives in Redis and reaches every replica within seconds.</p>
    <${ErrorBox} error=${features.error} />
    <ul class="cards" aria-label="Features">
      ${list.map((f) => html`<${FeatureCard} key=${f.name} feature=${f} onChanged=${(n: Feature) => setChanged((c) => ({ ...c, [n.name]: n }))} />`)}
    </ul>
  </main>`;
}
