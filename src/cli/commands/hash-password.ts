import type { Command } from 'commander';
import { hashPassword } from '../../access/password-hash.js';

export function registerHashPasswordCommand(program: Command): void {
  program
    .command('hash-password')
    .description('read a password on stdin and print its scrypt hash for users.static')
    .action(async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of process.stdin as AsyncIterable<Buffer>) chunks.push(chunk);
      // One trailing newline (from echo or a terminal) is not part of the password.
      const password = Buffer.concat(chunks)
        .toString('utf8')
        .replace(/\r?\n$/, '');
      if (password === '') {
        process.stderr.write('no password on stdin; try: printf %s "$PASSWORD" | outrigger hash-password\n');
        process.exitCode = 1;
        return;
      }
      process.stdout.write(`${await hashPassword(password)}\n`);
    });
}
