import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { validateConfig } from './validate.js';
import type { OutriggerConfig } from './types.js';

export class ConfigError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`${file}: ${problems.length} problem${problems.length === 1 ? '' : 's'}\n${problems.join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses YAML text, reporting syntax errors with their line as `path: problem` entries. */
export function parseYaml(text: string, label: string, problems: string[]): unknown {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  for (const error of doc.errors) {
    const line = error.linePos?.[0];
    problems.push(`${label}${line ? `:${line.line}:${line.col}` : ''}: ${error.message.split('\n')[0]}`);
  }
  return doc.errors.length ? undefined : doc.toJS();
}

/** Why a file could not be read, naming its absolute path (never a bare ENOENT). */
export function readProblem(error: unknown, file: string): string {
  const absolute = resolve(file);
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return `file not found: ${absolute}`;
  if (code === 'EACCES' || code === 'EPERM') return `permission denied reading ${absolute}`;
  if (code === 'EISDIR') return `${absolute} is a directory, not a file`;
  return `cannot read ${absolute}: ${code ?? String(error)}`;
}

export interface LoadedConfig {
  config: OutriggerConfig;
  /** Absolute path of the config file, for resolving relative paths (bootstrap, users file). */
  file: string;
}

/** Loads, interpolates and validates a config file; throws ConfigError listing every problem. */
export function loadConfig(file: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const absolute = resolve(file);
  let text: string;
  try {
    text = readFileSync(absolute, 'utf8');
  } catch (error) {
    throw new ConfigError(file, [readProblem(error, absolute)]);
  }
  return loadConfigText(text, absolute, env);
}

export function loadConfigText(text: string, absolute: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const problems: string[] = [];
  const parsed = parseYaml(text, absolute, problems);
  if (problems.length) throw new ConfigError(absolute, problems);
  const interpolated = interpolateEnv(parsed, env, problems);
  const withUsersFile = inlineUsersFile(interpolated, dirname(absolute), env, problems);
  const { config, problems: invalid } = validateConfig(withUsersFile);
  problems.push(...invalid);
  if (config.acl.bootstrap) config.acl.bootstrap = resolve(dirname(absolute), config.acl.bootstrap);
  if (problems.length) throw new ConfigError(absolute, problems);
  return { config, file: absolute };
}

/** `users.file: users.yaml` keeps password hashes out of the main file (a separate Secret). */
function inlineUsersFile(raw: unknown, baseDir: string, env: NodeJS.ProcessEnv, problems: string[]): unknown {
  const users = (raw as { users?: Record<string, unknown> } | undefined)?.users;
  if (!users || typeof users !== 'object' || users.file === undefined) return raw;
  const { file, ...rest } = users;
  if (typeof file !== 'string') {
    problems.push('users.file: must be a path to a YAML list of {id, password, roles}');
    return raw;
  }
  if (rest.static !== undefined) problems.push('users.file: give users either inline in users.static or in users.file, not both');
  let text = '';
  try {
    text = readFileSync(resolve(baseDir, file), 'utf8');
  } catch (error) {
    problems.push(`users.file: ${readProblem(error, resolve(baseDir, file))}`);
    return { ...(raw as object), users: rest };
  }
  const list = interpolateEnv(parseYaml(text, file, problems), env, problems, 'users.file');
  return { ...(raw as object), users: { ...rest, static: list } };
}

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
