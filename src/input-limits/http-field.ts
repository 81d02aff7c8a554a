/**
 * What RFC 9110 allows in a header: a name is a token (§5.1, `tchar`), a value is visible ASCII,
 * obs-text, spaces and tabs, with no leading or trailing whitespace (§5.5). Node's client throws
 * on anything else, so a webhook header outside these rules would fail every delivery.
 */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/** Why `name: value` cannot be sent as an HTTP header, or null. */
export function headerFieldProblem(name: string, value: string): string | null {
  if (!TOKEN.test(name)) return `header name ${JSON.stringify(name)} is not an HTTP token (letters, digits and !#$%&'*+-.^_\`|~ only)`;
  if (!FIELD_VALUE.test(value)) return `the value of header ${JSON.stringify(name)} holds characters HTTP forbids in a header (control characters, line breaks or non-Latin-1 text)`;
  if (/^[ \t]|[ \t]$/.test(value)) return `the value of header ${JSON.stringify(name)} starts or ends with whitespace`;
  return null;
}
