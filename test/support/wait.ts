/**
 * Waiting on a condition instead of sleeping a guessed time: `waitFor` polls until the value it
 * reads passes, and fails, naming what it waited for and the last value, after a deadline set
 * generously (the deadline is not what a test measures; it only ends a wait that never ends).
 */
export async function waitFor<T>(read: () => T | Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value)) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last value: ${describe(value)}`);
    await sleep(25);
    value = await read();
  }
  return value;
}

/** Polls until `check` holds; fails naming `what` after `timeoutMs` (15 s unless told). */
export async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  await waitFor(check, (ok) => ok, timeoutMs, what);
}

function describe(value: unknown): string {
  const shown = value instanceof Set ? { size: value.size, values: [...value] } : value;
  return JSON.stringify(shown)?.slice(0, 2000) ?? String(shown);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
