import { describe, expect, it } from 'vitest';
import { resolveTelemetry } from '../../../src/config/telemetry.js';
import { validateConfig } from '../../../src/config/validate.js';

const base = { service: { id: 'svc' }, upstream: { url: 'http://127.0.0.1:8081' } };

/** Issue 34's settings, as `outrigger check` reads them: defaults, and a clear problem for each bad value. */
describe('issue 34 settings', () => {
  it('defaults: listen.sendTimeoutMs 60 s, upstream.bufferBytesPerClient 32 MiB, telemetry.clientSampledFlag respect', () => {
    const { config, problems } = validateConfig(base);
    expect(problems).toEqual([]);
    expect(config.listen.sendTimeoutMs).toBe(60_000);
    expect(config.upstream.bufferBytesPerClient).toBe(32 * 1024 * 1024);
    expect(config.upstream.maxConnectionsPerClient).toBe(64);
    expect(config.telemetry.clientSampledFlag).toBe('respect');
  });

  it('each bad value is a problem naming its key', () => {
    const { problems } = validateConfig({
      ...base,
      listen: { sendTimeoutMs: 5 },
      upstream: { ...base.upstream, bufferBytesPerClient: -1 },
      telemetry: { clientSampledFlag: 'sometimes' },
    });
    expect(problems).toEqual(
      expect.arrayContaining([expect.stringMatching(/^listen\.sendTimeoutMs: /), expect.stringMatching(/^upstream\.bufferBytesPerClient: /), expect.stringMatching(/^telemetry\.clientSampledFlag: /)]),
    );
    expect(problems).toHaveLength(3);
  });

  it('clientSampledFlag reaches the exporter settings', () => {
    const { config } = validateConfig({ ...base, telemetry: { clientSampledFlag: 'ignore', otlp: { endpoint: 'http://collector:4318' } } });
    expect(resolveTelemetry(config.telemetry, {}).settings?.clientSampledFlag).toBe('ignore');
  });
});
