/**
 * What every console page's browser test stands up: the built CLI with the static users root and
 * alice on a test-owned Redis, a headless Chromium with one page whose errors are collected, and
 * the shared checks (axe-core, screenshots when OUTRIGGER_SCREENSHOTS names a folder). Each test
 * starts its own backend first and gives the rest of its config.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { hashPassword } from '../../../src/access/password-hash.js';
import { launchBrowser, openPage } from '../../support/clients/browser.js';
import { CLI, startCli, writeTempFile, type RunningCli } from '../../support/clients/cli.js';
import { startTestRedis, type TestRedis } from '../../support/redis/redis.js';

const basic = (id: string, pw: string) => `Basic ${Buffer.from(`${id}:${pw}`).toString('base64')}`;
export const ROOT = basic('root', 'root-password');
export const ALICE = basic('alice', 'alice-password');
export const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
export const shots = process.env.OUTRIGGER_SCREENSHOTS ? resolve(process.env.OUTRIGGER_SCREENSHOTS) : null;

export interface ConsoleStack {
  redis: TestRedis;
  proxy: RunningCli;
  browser: Browser;
  page: Page;
  stop(): Promise<void>;
}

/** The page's size, and how long its actions may wait (playwright's default otherwise). */
export interface ConsoleView {
  width: number;
  height: number;
  timeoutMs?: number;
}

/** `config` is the rest of outrigger.yaml (upstream, acl, limits...), given the Redis URL is set. */
export async function startConsoleStack(service: string, config: Record<string, unknown>, view: ConsoleView, pageErrors: string[]): Promise<ConsoleStack> {
  if (!existsSync(CLI) || !existsSync(resolve(CLI, '../../../assets/console/main.js'))) throw new Error('run `npm run build` first: this test starts the built CLI and its console assets');
  const redis = await startTestRedis();
  const configFile = writeTempFile('outrigger.yaml', {
    service: { id: service },
    listen: { host: '127.0.0.1', port: 0 },
    redis: { url: redis.url },
    users: {
      source: 'static',
      static: [
        { id: 'root', password: await hashPassword('root-password'), roles: ['root'] },
        { id: 'alice', password: await hashPassword('alice-password'), roles: ['user'] },
      ],
    },
    log: { level: 'info' },
    ...config,
  });
  const proxy = await startCli(configFile);
  const browser = await launchBrowser();
  const page = await openPage(browser, { ...view, errors: pageErrors });
  return {
    redis,
    proxy,
    browser,
    page,
    async stop() {
      await browser.close();
      proxy.child.kill('SIGTERM');
      await proxy.exited;
      await redis.close();
    },
  };
}

/** Writes `<name>.png` of the whole page into OUTRIGGER_SCREENSHOTS, when it is set. */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (!shots) return;
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}
