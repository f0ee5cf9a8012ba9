// What the dashboard's browser tests share: Debian's chromium launched through
// playwright-core with a fresh profile, every request beyond loopback refused and
// remembered, and numbered checks that stop the run at the first failure.
//
// Environment: TICKERTAPE_PLAYWRIGHT_DIR, a directory whose node_modules holds
// playwright-core (scripts/test installs it into .cache/browser-test); TICKERTAPE_CHROMIUM,
// the browser (default /usr/bin/chromium).

import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** How long a test waits for anything the page should do. */
export const WAIT_MS = 15000;

// The flags this machine needs (its network is closed).
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
  '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync'];

/** The server's URL from the command line (no trailing slash); exits with `usage` without. */
export function serverUrl(usage) {
  const base = (process.argv[2] || '').replace(/\/$/, '');
  if (!base || !process.env.TICKERTAPE_PLAYWRIGHT_DIR) {
    console.error(`usage: TICKERTAPE_PLAYWRIGHT_DIR=DIR node ${usage}`);
    process.exit(2);
  }
  return base;
}

let checks = 0;

/** One check: printed as "ok N - what", or thrown with what was seen. */
export function check(condition, what, seen) {
  if (!condition) {
    throw new Error(`FAILED: ${what}${seen === undefined ? '' : `\n  seen: ${JSON.stringify(seen)}`}`);
  }
  checks += 1;
  console.log(`ok ${checks} - ${what}`);
}

/** How many checks passed so far. */
export function checksPassed() {
  return checks;
}

export function isLoopback(url) {
  const { protocol, hostname } = new URL(url);
  if (protocol === 'data:' || protocol === 'blob:') return true;
  return ['127.0.0.1', 'localhost', '[::1]', '::1'].includes(hostname);
}

/**
 * A browser context in a fresh profile with `options` (playwright's context options, e.g.
 * viewport, timezoneId, httpCredentials) and its page. `offsite` collects the URLs beyond
 * loopback that were refused; `close()` ends the browser and removes the profile.
 */
export async function openBrowser(options = {}) {
  const playwrightDir = resolve(process.env.TICKERTAPE_PLAYWRIGHT_DIR);
  const { chromium } = createRequire(join(playwrightDir, 'package.json'))('playwright-core');
  const profile = mkdtempSync(join(tmpdir(), 'tickertape-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.TICKERTAPE_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
    ...options,
  });
  const offsite = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (isLoopback(url)) return route.continue();
    offsite.push(url);
    return route.abort();
  });
  const page = context.pages()[0] || (await context.newPage());
  const close = async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  };
  return { context, page, offsite, close };
}
