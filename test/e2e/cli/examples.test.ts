import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { loadConfigText } from '../../../src/config/load.js';
import { runCli } from '../../support/clients/cli.js';

const examples = resolve(import.meta.dirname, '../../../examples');
/** The `${VAR}` names a text uses without a default (`${VAR:-x}` has one; `$${` is literal). */
const requiredVars = (text: string) => [...text.matchAll(/(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)(:[-?][^}]*)?\}/g)].filter((m) => !m[2]?.startsWith(':-')).map((m) => m[1]!);
/** Kubernetes' `$(VAR)` references. */
const kubeRefs = (text: string) => [...text.matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g)].map((m) => m[1]!);

/** Runs the built `outrigger check` on `files` placed in one folder that stands for the mount. */
async function checkMounted(files: Record<string, string>, mountPath: string, env: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'outrigger-example-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text.split(mountPath).join(dir));
  // Generous: a loaded CI machine takes its time to start a Node process.
  return runCli(['check', '-c', join(dir, 'outrigger.yaml')], { env, timeoutMs: 90_000 });
}

describe('examples/kubernetes', () => {
  const read = (file: string) => parseAllDocuments(readFileSync(join(examples, 'kubernetes', file), 'utf8')).map((d) => d.toJS());
  const shared = read('outrigger-shared.yaml');
  const kind = (k: string) => shared.filter((d) => d.kind === k);
  const configMap = kind('ConfigMap')[0];
  const secret = kind('Secret')[0];
  const service = kind('Service')[0];
  const env = { ...secret.stringData, UPSTREAM_JWT_SECRET: 'x'.repeat(40) };
  const { config } = loadConfigText(configMap.data['outrigger.yaml'], '/etc/outrigger/outrigger.yaml', env);

  // The native sidecar (1.29+) and the older two-container form: the same checks for both.
  describe.each([
    ['outrigger-sidecar.yaml', 'native sidecar'],
    ['outrigger-two-containers.yaml', 'two containers'],
  ])('%s (%s)', (file) => {
    const docs = read(file);
    const deployment = docs.find((d) => d.kind === 'Deployment');
    const pod = deployment.spec.template.spec;
    const containers: any[] = [...(pod.initContainers ?? []), ...pod.containers];
    const outrigger = containers.find((c) => c.name === 'outrigger');
    const backend = containers.find((c) => c.name === 'backend');

    it('is one Deployment whose Pod the shared Service selects', () => {
      expect(docs.map((d) => d.kind)).toEqual(['Deployment']);
      expect(deployment.spec.template.metadata.labels).toMatchObject(service.spec.selector);
    });

    it('defines every variable before a $(VAR) uses it, from secret keys that exist', () => {
      for (const container of containers) {
        const defined = new Set<string>();
        for (const from of container.envFrom ?? []) {
          expect(from.secretRef.name).toBe(secret.metadata.name);
          for (const key of Object.keys(secret.stringData)) defined.add(key);
        }
        for (const entry of container.env ?? []) {
          for (const ref of kubeRefs(String(entry.value ?? ''))) expect(defined.has(ref), `${container.name}: $(${ref}) in ${entry.name} before it is defined`).toBe(true);
          const ref = entry.valueFrom?.secretKeyRef;
          if (ref) {
            expect(ref.name).toBe(secret.metadata.name);
            expect(Object.keys(secret.stringData)).toContain(ref.key);
          }
          defined.add(entry.name);
        }
      }
      // The backend gets its database and the shared JWT key.
      const rho = backend.env.find((e: any) => e.name === 'RHO').value as string;
      expect(rho).toMatch(/\/mclient\/connection-string->"\$\(MONGO_URI\)"/);
      expect(rho).toMatch(/\/jwtConfigProvider\/key->"\$\(UPSTREAM_JWT_SECRET\)"/);
    });

    it('gives Outrigger every ${VAR} its mounted config uses, and the config passes outrigger check', async () => {
      const available = new Set(Object.keys(secret.stringData));
      for (const name of requiredVars(configMap.data['outrigger.yaml'])) expect(available.has(name), `${name} is not in the outrigger container's environment`).toBe(true);
      const mount = outrigger.volumeMounts.find((m: any) => m.name === pod.volumes.find((v: any) => v.configMap?.name === configMap.metadata.name).name);
      expect(outrigger.args).toEqual(['start', '-c', `${mount.mountPath}/outrigger.yaml`]);
      const { code, stdout, stderr } = await checkMounted(configMap.data, mount.mountPath, env);
      expect(stderr).toBe('');
      expect(code).toBe(0);
      expect(stdout).toMatch(/OK \(bootstrap .*setup\.yaml: OK\)/);
    }, 120_000);

    it('has startup, readiness and liveness probes on the real health routes of the port listen.port names, and the Service targets it', () => {
      const port = outrigger.ports.find((p: any) => p.name === outrigger.readinessProbe.httpGet.port);
      expect(port.containerPort).toBe(config.listen.port);
      expect(kind('Service')[0].spec.ports[0].targetPort).toBe(port.name);
      expect(outrigger.startupProbe.httpGet).toEqual({ path: `${config.routes.health}/ready`, port: port.name });
      expect(outrigger.readinessProbe.httpGet).toEqual({ path: `${config.routes.health}/ready`, port: port.name });
      expect(outrigger.livenessProbe.httpGet).toEqual({ path: `${config.routes.health}/live`, port: port.name });
      // One failed probe takes the Pod out, within the drain: the 503 of a SIGTERM matters at once.
      expect(outrigger.readinessProbe.failureThreshold * outrigger.readinessProbe.periodSeconds).toBeLessThan(config.shutdown.drainSeconds);
      expect(config.upstream.url).toMatch(/^http:\/\/127\.0\.0\.1:8081/);
      expect(backend.env.find((e: any) => e.name === 'RHO').value).toContain('/http-listener/port->8081');
      expect(config.acl.adminRoles).toContain('admin');
    });

    it("keeps the backend serving through Outrigger's drain", () => {
      const preStop = backend.lifecycle.preStop;
      // The sleep action (1.30+), or the image's own sleep before it.
      const seconds = preStop.sleep ? preStop.sleep.seconds : preStop.exec.command[0] === 'sleep' ? Number(preStop.exec.command[1]) : NaN;
      expect(seconds).toBeGreaterThan(config.shutdown.drainSeconds);
    });
  });

  it('runs Outrigger as a native sidecar: an init container with restartPolicy Always, draining from its preStop, in a grace period that fits', () => {
    const pod = read('outrigger-sidecar.yaml')[0].spec.template.spec;
    expect(pod.containers.map((c: any) => c.name)).toEqual(['backend']);
    const outrigger = pod.initContainers.find((c: any) => c.name === 'outrigger');
    expect(outrigger.restartPolicy).toBe('Always');
    // Its preStop runs as the Pod starts terminating; SIGUSR2 begins the drain (src/cli/commands/start.ts).
    expect(outrigger.lifecycle.preStop.exec.command).toEqual(['node', '-e', "process.kill(1, 'SIGUSR2')"]);
    const backendPreStop = pod.containers[0].lifecycle.preStop.sleep.seconds;
    // The backend's preStop and its own stop (10 s allowed), then Outrigger's whole timeout and 5 s for the flush.
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(backendPreStop + 10 + config.shutdown.timeoutSeconds + 5);
  });

  it('keeps the older two-container form beside it, in a grace period that fits', () => {
    const pod = read('outrigger-two-containers.yaml')[0].spec.template.spec;
    expect(pod.initContainers).toBeUndefined();
    expect(pod.containers.map((c: any) => c.name).sort()).toEqual(['backend', 'outrigger']);
    const outrigger = pod.containers.find((c: any) => c.name === 'outrigger');
    expect(outrigger.restartPolicy).toBeUndefined();
    expect(outrigger.lifecycle).toBeUndefined();
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(config.shutdown.timeoutSeconds + 5);
    const backendPreStop = Number(pod.containers.find((c: any) => c.name === 'backend').lifecycle.preStop.exec.command[1]);
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(backendPreStop + 10);
  });

  it('sets the two shutdown settings explicitly, so the grace periods above are computed from what runs', () => {
    expect(parse(configMap.data['outrigger.yaml']).shutdown).toEqual({ drainSeconds: 5, timeoutSeconds: 25 });
  });
});

describe('examples/docker-compose', () => {
  const dir = join(examples, 'docker-compose');
  const composeText = readFileSync(join(dir, 'docker-compose.yaml'), 'utf8');
  const compose = parse(composeText);
  const readme = readFileSync(join(dir, 'README.md'), 'utf8');
  const outrigger = compose.services.outrigger;

  it('documents every variable the compose file needs, and refuses to start without it', () => {
    const needed = new Set(requiredVars(composeText));
    expect([...needed]).toContain('UPSTREAM_JWT_SECRET');
    for (const name of needed) expect(readme, `${name} is not documented in README.md`).toMatch(new RegExp(`${name}=`));
    for (const m of composeText.matchAll(/\$\{UPSTREAM_JWT_SECRET(:[-?][^}]*)?\}/g)) expect(m[1], 'UPSTREAM_JWT_SECRET must be required (:?)').toMatch(/^:\?/);
  });

  it('mounts a config whose ${VAR}s the container gets, and which passes outrigger check', async () => {
    const files: Record<string, string> = {};
    let mountDir = '';
    for (const volume of outrigger.volumes as string[]) {
      const [source, target] = volume.split(':');
      files[target!.split('/').pop()!] = readFileSync(join(dir, source!), 'utf8');
      mountDir = target!.slice(0, target!.lastIndexOf('/'));
    }
    expect(outrigger.command ?? ['start', '-c', '/etc/outrigger/outrigger.yaml']).toEqual(['start', '-c', `${mountDir}/outrigger.yaml`]);
    const env: Record<string, string> = { ...outrigger.environment, UPSTREAM_JWT_SECRET: 'x'.repeat(40) };
    for (const name of requiredVars(files['outrigger.yaml']!)) expect(Object.keys(outrigger.environment)).toContain(name);
    const { code, stdout, stderr } = await checkMounted(files, mountDir, env);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/bootstrap .*setup\.yaml: OK/);

    const { config } = loadConfigText(files['outrigger.yaml']!, '/etc/outrigger/outrigger.yaml', env);
    expect(outrigger.ports).toEqual([`8080:${config.listen.port}`]);
    expect(config.acl.adminRoles).toContain('admin'); // RESTHeart's default admin role
    expect(config.upstream.url).toBe('http://restheart:8080');
  }, 120_000);

  it('has health conditions and restart policies', () => {
    for (const [name, service] of Object.entries<any>(compose.services)) {
      expect(service.restart, `${name} has no restart policy`).toBe('unless-stopped');
      for (const [dependency, how] of Object.entries<any>(service.depends_on ?? {})) {
        if (how.condition === 'service_healthy') expect(compose.services[dependency].healthcheck, `${dependency} has no healthcheck`).toBeDefined();
      }
    }
    expect(outrigger.depends_on.redis.condition).toBe('service_healthy');
    expect(compose.services.restheart.depends_on.mongodb.condition).toBe('service_healthy');
  });
});
