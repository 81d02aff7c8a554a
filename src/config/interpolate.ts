/**
 * `${VAR}` and `${VAR:-default}` in string values, so Kubernetes secrets can arrive as
 * environment variables. An unset variable without a default is a problem naming it; `$${`
 * escapes a literal `${`.
 */
const PATTERN = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

export function interpolateEnv(value: unknown, env: NodeJS.ProcessEnv, problems: string[], path = ''): unknown {
  if (typeof value === 'string') {
    return value.replace(PATTERN, (whole, name: string | undefined, fallback: string | undefined) => {
      if (whole === '$${') return '${';
      const found = env[name!];
      if (found !== undefined && found !== '') return found;
      if (fallback !== undefined) return fallback;
      problems.push(`${path || '(root)'}: environment variable ${name} is not set and has no default (write \${${name}:-value} to give one)`);
      return '';
    });
  }
  if (Array.isArray(value)) return value.map((item, i) => interpolateEnv(item, env, problems, `${path}[${i}]`));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = interpolateEnv(item, env, problems, path ? `${path}.${key}` : key);
    return out;
  }
  return value;
}
