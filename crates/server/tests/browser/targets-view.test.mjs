// The dashboard's Targets view in a real browser, against a scraping server that
// crates/server/tests/dashboard_browser.rs started (two targets: one up, one down):
//
//   node targets-view.test.mjs http://127.0.0.1:PORT UP_URL DOWN_URL
//
// Environment: see harness.mjs. Exits 1 on the first failed check.

import { check, checksPassed, openBrowser, serverUrl, WAIT_MS } from './harness.mjs';

const base = serverUrl('targets-view.test.mjs SERVER_URL UP_URL DOWN_URL');
const [upUrl, downUrl] = process.argv.slice(3, 5);

/** The rows the view shows: each target's cells by column, its health and URL. */
async function shownRows(page) {
  return page.evaluate(() => [...document.querySelectorAll('#targets-table tbody tr')].map((row) => ({
    url: row.dataset.url,
    health: row.dataset.health,
    cells: [...row.children].map((cell) => cell.textContent),
  })));
}

const { page, offsite, close } = await openBrowser();
const errors = [];
page.on('pageerror', (error) => errors.push(error.message));
try {
  await page.goto(`${base}/`);
  check(await page.isHidden('#targets')
    && (await page.getAttribute('#targets-toggle', 'aria-pressed')) === 'false',
  'the Targets view is closed by default');

  const asked = page.waitForRequest((r) => r.url().includes('/prometheus/api/v1/targets'), { timeout: WAIT_MS });
  await page.click('#targets-toggle');
  await asked;
  await page.waitForSelector('#targets[data-state="ok"]', { timeout: WAIT_MS });
  check(new URL(page.url()).searchParams.get('targets') === 'open'
    && (await page.getAttribute('#targets-toggle', 'aria-pressed')) === 'true',
  'opening the view asks the targets API, keeps targets=open in the URL and presses the button', page.url());

  const rows = await shownRows(page);
  const up = rows.find((row) => row.url === upUrl);
  const down = rows.find((row) => row.url === downUrl);
  check(rows.length === 2 && up && down, 'one row per target', rows);
  check(up.health === 'up' && up.cells[0] === 'up-job' && up.cells[2] === 'up'
    && up.cells[3].includes('job="up-job"') && /\d+ s ago/.test(up.cells[4])
    && /\d ms|\d s/.test(up.cells[5]) && up.cells[6] === '',
  'the target that answers: its job, state up, labels, last scrape, duration, no error', up);
  check(down.health === 'down' && down.cells[6].length > 0 && down.cells[4] !== 'never',
    'the target that does not answer: state down and its error', down);
  check(/1 up · 1 down/.test(await page.textContent('#targets-note')),
    'the head counts the targets by state', await page.textContent('#targets-note'));

  await page.reload();
  await page.waitForSelector('#targets[data-state="ok"]', { timeout: WAIT_MS });
  check((await shownRows(page)).length === 2, 'a reload of targets=open opens the view again');

  await page.click('#targets-close');
  check(await page.isHidden('#targets') && new URL(page.url()).searchParams.get('targets') === null,
    'closing hides the view and takes targets out of the URL', page.url());
  check(errors.length === 0, 'no page errors', errors);
  check(offsite.length === 0, 'no request left loopback', offsite);
} finally {
  await close();
}
console.log(`${checksPassed()} checks passed`);
