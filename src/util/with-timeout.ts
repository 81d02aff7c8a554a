/**
 * `promise`, or a rejection with `onTimeout()` once `ms` have passed without it settling. The
 * timer is cleared when the promise settles and never keeps the process alive. A bound that is
 * not a positive finite number means no bound: the promise as it is.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => Error = () => new Error(`no answer within ${ms} ms`)): Promise<T> {
  if (!(ms > 0) || !Number.isFinite(ms)) return promise;
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(onTimeout()), ms);
    timer.unref?.();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
