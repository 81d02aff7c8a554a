import type { IncomingMessage } from 'node:http';

/** At most this much of a refused request's unread body is read and thrown away. */
export const LINGER_BYTES = 1024 * 1024;
/** For at most this long. */
export const LINGER_MS = 1000;
/**
 * Read and thrown away after an answer already sent (a 413): nothing waits on it any more, so the
 * bound is only what discarding may cost in CPU (some 30 ms), well past any body limit.
 */
export const LINGER_AFTER_ANSWER_BYTES = 64 * 1024 * 1024;

/**
 * A request refused before its body was read (a bad token, a wrong Content-Type, a 404) usually
 * has a client still sending that body. Answering and closing at once resets the connection under
 * the client's writes: it sees EPIPE or ECONNRESET instead of the answer naming its mistake. As
 * nginx's lingering close does, the rest of the body is read and thrown away first, bounded in
 * bytes and time, so a client that trickles or sends too much costs at most LINGER_MS. Calls
 * `answer` once: at once when there is nothing to wait for, after the body otherwise.
 */
export function afterUnreadBody(req: IncomingMessage | undefined, answer: () => void): void {
  const declared = Number(req?.headers['content-length'] ?? 0);
  if (!req || declared > LINGER_BYTES) return answer();
  discardUnread(req, LINGER_BYTES, answer);
}

/**
 * Reads what is left of `req`'s body and throws it away, for at most `maxBytes` and LINGER_MS,
 * then calls `then` once (at once when nothing is left to read).
 */
export function discardUnread(req: IncomingMessage, maxBytes: number, then: () => void): void {
  if (req.complete || req.destroyed || req.readableEnded) return then();
  let seen = 0;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    req.off('data', onData);
    req.off('end', finish);
    req.off('close', finish);
    then();
  };
  const onData = (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > maxBytes) finish();
  };
  const timer = setTimeout(finish, LINGER_MS);
  timer.unref();
  req.on('data', onData);
  req.once('end', finish);
  req.once('close', finish);
  req.resume();
}
