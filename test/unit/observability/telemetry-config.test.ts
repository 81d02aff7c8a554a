import { describe, expect, it } from 'vitest';
import { resolveTelemetry } from '../../../src/config/telemetry.js';
import { validateConfig } from '../../../src/config/validate.js';
import { formatTraceparent, newSpanId, newTraceId, parseTraceparent } from '../../../src/observability/tracing/trace-ids.js';

const base = { service: { id: 'svc' }, upstream: { url: 'http://127.0.0.1:8081' } };
const telemetryOf = (telemetry: unknown) => validateConfig({ ...base, telemetry }).config.telemetry;

describe('telemetry: config and OTEL_* variables (SPEC §9)', () => {
  it('no endpoint anywhere: no export (propagation only), defaults as the SPEC says', () => {
    const { config, problems } = validateConfig(base);
    expect(problems).toEqual([]);
    expect(config.telemetry).toMatchObject({ serviceName: 'outrigger', sampler: 'parentbased_always_on', otlp: { endpoint: null, protocol: 'http/protobuf' } });
    expect(resolveTelemetry(config.telemetry, {}).settings).toBeNull();
  });

  it('the config endpoint gets /v1/traces; the environment wins over each key', () => {
    const t = telemetryOf({ serviceName: 'edge', otlp: { endpoint: 'http://collector:4318', protocol: 'http/json', headers: { 'X-Api-Key': 'k1' } } });
    expect(resolveTelemetry(t, {}).settings).toMatchObject({ url: 'http://collector:4318/v1/traces', protocol: 'http/json', serviceName: 'edge', headers: { 'x-api-key': 'k1' } });
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://other:4318/',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=k2,authorization=Bearer%20t',
      OTEL_SERVICE_NAME: 'from-env',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,team=data',
    };
    const { settings, problems } = resolveTelemetry(t, env);
    expect(problems).toEqual([]);
    expect(settings).toMatchObject({
      url: 'http://other:4318/v1/traces',
      protocol: 'http/protobuf',
      headers: { 'x-api-key': 'k2', authorization: 'Bearer t' },
      serviceName: 'from-env',
      sampler: 'parentbased_traceidratio',
      samplerArg: 0.25,
      resourceAttributes: { 'deployment.environment': 'prod', team: 'data' },
    });
    expect(resolveTelemetry(t, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://x:4318/custom' }).settings?.url).toBe('http://x:4318/custom');
    expect(resolveTelemetry(t, { OTEL_SDK_DISABLED: 'true' }).settings).toBeNull();
  });

  it('gRPC is refused, naming http/protobuf, in the config and in the environment (`check` reports both)', () => {
    const { problems } = validateConfig({ ...base, telemetry: { otlp: { endpoint: 'http://c:4317', protocol: 'grpc' } } });
    expect(problems).toEqual([expect.stringMatching(/^telemetry\.otlp\.protocol: gRPC is not offered: use http\/protobuf/)]);
    const env = resolveTelemetry(telemetryOf({}), { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317' });
    expect(env.problems).toEqual([expect.stringMatching(/^OTEL_EXPORTER_OTLP_PROTOCOL: gRPC is not offered: use http\/protobuf/)]);
  });

  it('names what else is wrong, never echoing a header value', () => {
    const { problems } = validateConfig({ ...base, telemetry: { sampler: 'sometimes', samplerArg: 2, otlp: { endpoint: 'collector:4318', timeoutMs: 1 }, extra: true } });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^telemetry\.sampler: must be one of/),
        expect.stringMatching(/^telemetry\.samplerArg: must be a ratio/),
        expect.stringMatching(/^telemetry\.otlp\.endpoint: must be the collector's OTLP\/HTTP URL/),
        expect.stringMatching(/^telemetry\.otlp\.timeoutMs:/),
        expect.stringMatching(/^telemetry\.extra: unknown option/),
      ]),
    );
    const env = resolveTelemetry(telemetryOf({}), { OTEL_EXPORTER_OTLP_HEADERS: 'secret-without-equals', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' });
    expect(env.problems.join()).not.toContain('secret-without-equals');
  });
});

describe('W3C traceparent', () => {
  it('reads valid headers and refuses invalid ones', () => {
    expect(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toEqual({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', flags: 1 });
    expect(parseTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02-future')).toMatchObject({ flags: 0 });
    for (const bad of [
      undefined,
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra',
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
    ])
      expect(parseTraceparent(bad)).toBeNull();
  });

  it('new ids are distinct, well-formed and round-trip', () => {
    const ids = new Set(Array.from({ length: 1000 }, newTraceId));
    expect(ids.size).toBe(1000);
    const header = formatTraceparent(newTraceId(), newSpanId(), true);
    expect(parseTraceparent(header)).toMatchObject({ flags: 1 });
  });
});
