import { OutriggerError } from '../errors.js';

/**
 * A condition that cannot be parsed. It is an OutriggerError (400) so that a caller validating
 * a permission or a webhook may let it through to the HTTP layer as is; `position` is the
 * 0-based index into `source` of the offending character, for carets in the CLI and the UI.
 * The message never repeats the position: callers add it in the form they need.
 */
export class ConditionSyntaxError extends OutriggerError {
  readonly position: number;
  readonly source: string;

  constructor(source: string, position: number, message: string) {
    super(400, 'INVALID_CONDITION', message);
    this.name = 'ConditionSyntaxError';
    this.source = source;
    this.position = Math.max(0, Math.min(position, source.length));
  }
}

/**
 * Renders the line of `source` that holds `position` and a caret under it, the way Undertow's
 * parser reports errors, e.g.
 * ```
 * path('/a'))
 *           ^
 * ```
 */
export function pointAtPosition(source: string, position: number): string {
  const at = Math.max(0, Math.min(position, source.length));
  const lineStart = source.lastIndexOf('\n', at - 1) + 1;
  let lineEnd = source.indexOf('\n', at);
  if (lineEnd === -1) lineEnd = source.length;
  const line = source.slice(lineStart, lineEnd).replace(/\r$/, '');
  // Tabs keep their width in the caret line so the caret lines up in a terminal.
  const padding = source.slice(lineStart, at).replace(/[^\t]/g, ' ');
  return `${line}\n${padding}^`;
}
