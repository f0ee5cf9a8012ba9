// A screenshot of a dashboard view, as in the README (docs/dashboard.png):
//
//   TICKERTAPE_PLAYWRIGHT_DIR=.cache/browser-test node crates/server/tests/browser/screenshot.mjs \
//     http://127.0.0.1:8086 '/?measurement=cpu&field=usage_user&field=usage_system&range=12h' \
//     docs/dashboard.png 1280 612
//
// with a server filled by demo-data.mjs. The mouse rests on the first chart, so its tooltip
// shows (and the crosshair on the others).

import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const [base, view, out, width = '1280', height = '760'] = process.argv.slice(2);
const playwrightDir = process.env.TICKERTAPE_PLAYWRIGHT_DIR;
if (!base || !view || !out || !playwrightDir) {
  console.error('usage: TICKERTAPE_PLAYWRIGHT_DIR=DIR screenshot.mjs SERVER_URL VIEW OUT.png [WIDTH HEIGHT]');
  process.exit(2);
}
const { chromium } = createRequire(join(resolve(playwrightDir), 'package.json'))('playwright-core');

const profile = mkdtempSync(join(tmpdir(), 'tickertape-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.TICKERTAPE_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  viewport: { width: Number(width), height: Number(height) },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = context.pages()[0] || (await context.newPage());
  await page.goto(`${base.replace(/\/$/, '')}${view}`);
  // Every chart of the view (one per `field`) drawn.
  await page.waitForFunction(() => [...document.querySelectorAll('.chart')]
    .every((chart) => chart.dataset.state === 'ok'), null, { timeout: 15000 });
  const box = await page.locator('#chart canvas').boundingBox();
  await page.mouse.move(box.x + box.width * 0.62, box.y + box.height * 0.5);
  await page.screenshot({ path: out });
  console.log(`wrote ${out}`);
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
