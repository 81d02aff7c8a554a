import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/**
 * Debian's `chromium` package, driven headless by playwright-core (which downloads no browser of
 * its own). `.ci/run` installs the package; OUTRIGGER_CHROMIUM points elsewhere when needed.
 */
export function chromiumPath(): string {
  const candidates = [process.env.OUTRIGGER_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(Boolean) as string[];
  const found = candidates.find((path) => existsSync(path));
  if (!found) throw new Error(`no Chromium found (looked at ${candidates.join(', ')}): apt-get install chromium, or set OUTRIGGER_CHROMIUM`);
  return found;
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    // Tests run as root in CI; the sandbox needs user namespaces the CI machine may not give.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}
