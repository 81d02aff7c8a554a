import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface CapturedMail {
  from: string;
  to: string[];
  raw: string;
}

export interface SmtpCapture {
  port: number;
  mails: CapturedMail[];
  close(): Promise<void>;
}

/**
 * A real SMTP server on a loopback port that keeps every message it accepts. `refuse` may
 * answer an SMTP error for a message (a 451 to exercise retries); otherwise it is accepted.
 * `port` listens on that port (a server that was down coming back); `delayMs` holds the answer
 * to each message that long (a slow server).
 */
export async function startSmtpCapture(options: { refuse?: () => Error | null; port?: number; delayMs?: number } = {}): Promise<SmtpCapture> {
  const mails: CapturedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    // close() waits this long for open connections (a worker's pooled one stays open): 30 s by default.
    closeTimeout: 1000,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const answer = () => {
          const refusal = options.refuse?.() ?? null;
          if (refusal) return callback(refusal);
          const envelope = session.envelope;
          mails.push({
            from: envelope.mailFrom ? envelope.mailFrom.address : '',
            to: envelope.rcptTo.map((r) => r.address),
            raw: Buffer.concat(chunks).toString('utf8'),
          });
          callback();
        };
        if (options.delayMs) setTimeout(answer, options.delayMs);
        else answer();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  return {
    port: (server.server.address() as AddressInfo).port,
    mails,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
