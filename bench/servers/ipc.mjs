/**
 * The IPC side of a helper server: listen on a free loopback port, report `{ready, port}` to the
 * bench, answer its commands, and exit when the bench goes away (so nothing outlives it).
 */
export function countingServer(server, commands = {}) {
  server.listen(0, '127.0.0.1', () => {
    process.send?.({ ready: true, port: server.address().port });
  });
  serveCommands(commands);
}

export function serveCommands(commands) {
  process.on('message', async (message) => {
    const handler = commands[message?.cmd];
    if (!handler) {
      process.send?.({ id: message?.id, error: `unknown command ${message?.cmd}` });
      return;
    }
    try {
      process.send?.({ id: message.id, ...(await handler(message)) });
    } catch (error) {
      process.send?.({ id: message.id, error: String(error) });
    }
  });
  process.on('disconnect', () => process.exit(0));
  // An exit, not the signal's default: a helper run with --cpu-prof writes its profile on exit.
  process.on('SIGTERM', () => process.exit(0));
}

/**
 * A RESTHeart stand-in as a helper server: its in-memory request log is folded into the caller's
 * counters every 100 ms (it would otherwise grow for the whole run), and `stats` answers them.
 */
export function serveStandinCounts(backend, fold, stats) {
  const drain = () => {
    const received = backend.requests;
    if (received.length === 0) return;
    fold(received);
    backend.clearRequests();
  };
  setInterval(drain, 100).unref();
  process.send?.({ ready: true, port: backend.port, url: backend.url });
  serveCommands({
    stats: () => {
      drain();
      return stats();
    },
  });
}
