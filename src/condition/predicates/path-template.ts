interface TemplatePart {
  readonly variable: boolean;
  /** The variable name, or the literal segment. */
  readonly text: string;
}

/** A `{` that is never closed, or a `}` not followed by `/`; `offset` is the index in the template. */
export class PathTemplateError extends Error {
  constructor(
    readonly offset: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A port of Undertow's `util.PathTemplate`, quirks included: segments after the first `{` are
 * parts; a `}` must be followed by `/`; a template without `{...}` is an exact match, unless it
 * contains `*`, which then matches any path starting with what precedes it (binding `${*}`);
 * one trailing `/` after the last part is accepted and an empty last segment binds `''`.
 */
export class PathTemplate {
  private readonly base: string;
  private readonly parts: readonly TemplatePart[];
  private readonly isTemplate: boolean;

  constructor(input: string) {
    const path = input.startsWith('/') ? input : `/${input}`;
    // Offsets reported to the user refer to the template as written.
    const shift = path.length - input.length;
    let state = 0;
    let base = '';
    let start = 0;
    const parts: TemplatePart[] = [];
    for (let i = 0; i < path.length; i++) {
      const c = path[i];
      switch (state) {
        case 0:
          state = c === '/' ? 1 : 0;
          break;
        case 1:
          if (c === '{') {
            base = path.slice(0, i);
            start = i + 1;
            state = 2;
          } else if (c !== '/') {
            state = 0;
          }
          break;
        case 2:
          if (c === '}') {
            parts.push({ variable: true, text: path.slice(start, i) });
            start = i;
            state = 3;
          }
          break;
        case 3:
          if (c !== '/') throw new PathTemplateError(Math.max(0, i - shift), `'}' must be followed by '/' in the path template '${input}'`);
          state = 4;
          break;
        case 4:
          if (c === '{') {
            start = i + 1;
            state = 2;
          } else if (c !== '/') {
            start = i;
            state = 5;
          }
          break;
        case 5:
          if (c === '/') {
            parts.push({ variable: false, text: path.slice(start, i) });
            start = i + 1;
            state = 4;
          }
          break;
      }
    }
    if (state === 0 || state === 1) base = path;
    else if (state === 2) throw new PathTemplateError(input.length, `'{' is never closed in the path template '${input}'`);
    else if (state === 5) parts.push({ variable: false, text: path.slice(start) });
    this.base = base;
    this.parts = parts;
    this.isTemplate = state > 1;
  }

  /**
   * Matches `path`. When `bound` is given it receives the variables; read it only after a
   * successful match (it may hold partial values otherwise).
   */
  match(path: string, bound?: Map<string, string>): boolean {
    if (!this.isTemplate && this.base.includes('*')) {
      const star = this.base.indexOf('*');
      if (!path.startsWith(this.base.slice(0, star))) return false;
      bound?.set('*', path.slice(star));
      return true;
    }
    if (!path.startsWith(this.base)) return false;
    if (!this.isTemplate) return path.length === this.base.length;

    let partIndex = 0;
    let current = this.parts[0]!;
    let segmentStart = this.base.length;
    let i: number;
    for (i = this.base.length; i < path.length; i++) {
      const c = path[i];
      if (c === '?' || current.text === '*') break;
      if (c === '/') {
        if (current.variable) bound?.set(current.text, path.slice(segmentStart, i));
        else if (!segmentEquals(path, segmentStart, i, current.text)) return false;
        partIndex++;
        if (partIndex === this.parts.length) return i === path.length - 1;
        current = this.parts[partIndex]!;
        segmentStart = i + 1;
      }
    }
    if (partIndex + 1 !== this.parts.length) return false;
    if (current.text === '*') {
      bound?.set('*', path.slice(segmentStart));
      return true;
    }
    if (current.variable) bound?.set(current.text, path.slice(segmentStart, i));
    else if (!segmentEquals(path, segmentStart, i, current.text)) return false;
    return true;
  }
}

function segmentEquals(path: string, start: number, end: number, expected: string): boolean {
  return end - start === expected.length && path.startsWith(expected, start);
}
