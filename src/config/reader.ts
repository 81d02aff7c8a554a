import { didYouMean } from '../util/did-you-mean.js';

/**
 * Reads one YAML mapping with defaults while collecting every problem as `path: problem`, so a
 * config with five mistakes is reported in one run instead of five. Each accessor records the
 * key as known; `finish()` then reports keys nobody asked for (typos like `upstream.timeout`).
 */
export class SectionReader {
  private readonly known = new Set<string>();
  private readonly data: Record<string, unknown>;

  constructor(
    raw: unknown,
    readonly path: string,
    readonly problems: string[],
  ) {
    if (raw === undefined || raw === null) this.data = {};
    else if (typeof raw === 'object' && !Array.isArray(raw)) this.data = raw as Record<string, unknown>;
    else {
      this.problems.push(`${path || '(root)'}: must be a mapping (key: value lines)`);
      this.data = {};
    }
  }

  private at(key: string): string {
    return this.path ? `${this.path}.${key}` : key;
  }

  private take(key: string): unknown {
    this.known.add(key);
    return this.data[key];
  }

  has(key: string): boolean {
    return this.data[key] !== undefined && this.data[key] !== null;
  }

  string(key: string, fallback: string, check?: (v: string) => string | null): string;
  string(key: string, fallback: null, check?: (v: string) => string | null): string | null;
  string(key: string, fallback: string | null, check?: (v: string) => string | null): string | null {
    const value = this.take(key);
    if (value === undefined || value === null) return fallback;
    if (typeof value !== 'string' && typeof value !== 'number') {
      this.problems.push(`${this.at(key)}: must be a string`);
      return fallback;
    }
    const text = String(value);
    const problem = check?.(text);
    if (problem) this.problems.push(`${this.at(key)}: ${problem}`);
    return text;
  }

  required(key: string, check?: (v: string) => string | null): string {
    if (!this.has(key)) {
      this.known.add(key);
      this.problems.push(`${this.at(key)}: is required`);
      return '';
    }
    return this.string(key, '', check);
  }

  integer(key: string, fallback: number, min: number, max: number): number {
    const value = this.take(key);
    if (value === undefined || value === null) return fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      this.problems.push(`${this.at(key)}: must be an integer from ${min} to ${max} (got ${JSON.stringify(value)})`);
      return fallback;
    }
    return value;
  }

  boolean(key: string, fallback: boolean): boolean {
    const value = this.take(key);
    if (value === undefined || value === null) return fallback;
    if (typeof value !== 'boolean') {
      this.problems.push(`${this.at(key)}: must be true or false (got ${JSON.stringify(value)})`);
      return fallback;
    }
    return value;
  }

  oneOf<T extends string>(key: string, fallback: T, allowed: readonly T[]): T {
    const value = this.take(key);
    if (value === undefined || value === null) return fallback;
    if (typeof value !== 'string' || !allowed.includes(value as T)) {
      this.problems.push(`${this.at(key)}: must be one of ${allowed.join(', ')} (got ${JSON.stringify(value)})`);
      return fallback;
    }
    return value as T;
  }

  strings(key: string, fallback: string[], check?: (v: string) => string | null): string[] {
    const value = this.take(key);
    if (value === undefined || value === null) return fallback;
    if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) {
      this.problems.push(`${this.at(key)}: must be a list of strings`);
      return fallback;
    }
    if (check) {
      value.forEach((item: string, i) => {
        const problem = check(item);
        if (problem) this.problems.push(`${this.at(key)}[${i}]: ${problem}`);
      });
    }
    return value as string[];
  }

  /** Raw access for shapes the caller validates itself (lists of objects). */
  raw(key: string): unknown {
    return this.take(key);
  }

  section(key: string): SectionReader {
    return new SectionReader(this.take(key), this.at(key), this.problems);
  }

  finish(): void {
    for (const key of Object.keys(this.data)) {
      if (!this.known.has(key)) this.problems.push(`${this.at(key)}: unknown option${didYouMean(key, this.known) || ' (check the spelling; see the configuration reference in README.md)'}`);
    }
  }
}
