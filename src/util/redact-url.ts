/** `redis://user:secret@host` → `redis://[redacted]@host`, for log lines, messages and the start summary. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//[redacted]@');
}
