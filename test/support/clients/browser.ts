import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

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

/**
 * A page in a new context of its own, with the wait every console row uses and the page's
 * uncaught errors pushed into `errors` (a row ends by asserting it stays empty).
 */
export async function openPage(browser: Browser, o: { width: number; height: number; errors: string[]; timeoutMs?: number }): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: o.width, height: o.height } })).newPage();
  page.setDefaultTimeout(o.timeoutMs ?? 10_000);
  page.on('pageerror', (error) => o.errors.push(String(error)));
  return page;
}

/** The console's sign-in form, as a person fills it. */
export async function signInToConsole(page: Page, baseUrl: string, user: string, password: string): Promise<void> {
  await page.goto(`${baseUrl}/_admin/`);
  await page.getByLabel('Username', { exact: true }).fill(user);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}
