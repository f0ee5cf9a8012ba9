// The dashboard's Series view and the dashboard behind `serve --auth`
// in a real browser, against a server that crates/server/tests/dashboard_browser.rs
// started and filled (see there for the data):
//
//   node series-view.test.mjs http://127.0.0.1:PORT             # the view, every click
//   node series-view.test.mjs http://127.0.0.1:PORT READ_TOKEN  # a server with --auth
//
// With a token: without credentials the page is refused (401, a Basic challenge, so a
// browser asks); with playwright's httpCredentials (any user name, the token as password)
// the page loads, the charts draw and the Series view fills, so the page's own requests
// carry the credentials. Environment: see harness.mjs. Exits 1 on the first failed check.

import { check, checksPassed, openBrowser, serverUrl, WAIT_MS } from './harness.mjs';

const base = serverUrl('series-view.test.mjs SERVER_URL [READ_TOKEN]');
const token = process.argv[3] || '';

// What dashboard_browser.rs wrote: cpu's three fields (usage_user, usage_system,
// usage_idle) of four hosts, host_0 and host_1 in region eu, host_2 and host_3 in us; and
// http_requests' one field (count) of the same four hosts, tagged by hostname only.
const EXPECTED = {
  totals: {
    series: 4 * 3 + 4 * 1,
    measurements: 2,
    fields: 3 + 1,
    tag_pairs: 4 + 2, // hostname=host_0…host_3, region=eu and us
  },
  lists: {
    series_by_measurement: { cpu: 4 * 3, http_requests: 4 },
    series_by_field: {
      'cpu.usage_user': 4, 'cpu.usage_system': 4, 'cpu.usage_idle': 4, 'http_requests.count': 4,
    },
    values_by_tag_key: { hostname: 4, region: 2 },
    series_by_tag: {
      // 2 hosts × 3 cpu fields; each host's 3 cpu series and its http_requests series.
      'region=eu': 6, 'region=us': 6,
      'hostname=host_0': 4, 'hostname=host_1': 4, 'hostname=host_2': 4, 'hostname=host_3': 4,
    },
  },
};

const CARDINALITY = '/api/v1/status/cardinality';

/** What the view shows: totals by key; per list, its rows in order. */
async function shownView(page) {
  return page.evaluate(() => {
    const totals = Object.fromEntries([...document.querySelectorAll('#cardinality [data-total]')]
      .map((node) => [node.dataset.total, node.textContent]));
    const lists = Object.fromEntries([...document.querySelectorAll('#cardinality table[data-list]')]
      .map((table) => [table.dataset.list, [...table.querySelectorAll('tbody tr[data-name]')].map((row) => ({
        name: row.dataset.name,
        text: row.children[1].textContent,
        bar: parseFloat(row.querySelector('.bar-fill').style.width),
        button: row.querySelector('button.pick') !== null,
      }))]));
    return { totals, lists };
  });
}

/** The view, filled, holds the counts of the data written (see EXPECTED). */
async function checkCounts(page, where) {
  await page.waitForSelector('#cardinality[data-state="ok"]', { timeout: WAIT_MS });
  const { totals, lists } = await shownView(page);
  const wantTotals = Object.fromEntries(Object.entries(EXPECTED.totals).map(([k, v]) => [k, String(v)]));
  check(JSON.stringify(totals) === JSON.stringify(wantTotals),
    `${where}: the totals are those of the data written (16 series, 2 measurements, 4 fields, 6 tag pairs)`,
    { totals, wantTotals });
  for (const [key, want] of Object.entries(EXPECTED.lists)) {
    const rows = lists[key] || [];
    const got = Object.fromEntries(rows.map((row) => [row.name, Number(row.text)]));
    const names = Object.keys(want).sort();
    const counts = rows.map((row) => Number(row.text));
    check(JSON.stringify(got, names) === JSON.stringify(want, names) && rows.length === names.length,
      `${where}: ${key} lists each name with its count`, { got, want });
    const largest = Math.max(...counts);
    check(counts.every((n, i) => i === 0 || counts[i - 1] >= n)
      && rows.every((row) => Math.abs(row.bar - (100 * Number(row.text)) / largest) < 0.01),
    `${where}: ${key} is largest first, each bar its count beside the largest`, rows);
  }
}

/** Runs `action`, then returns the query parameters of the next chart query. */
async function nextQuery(page, action) {
  const request = page.waitForRequest((r) => r.url().includes('/api/v1/query?'), { timeout: WAIT_MS });
  await action();
  return new URL((await request).url()).searchParams;
}

/**
 * Runs `action` and waits until the first chart has drawn an answer since: its state is
 * marked first, as it is already "ok" from the answer before.
 */
async function redrawn(page, action) {
  await page.locator('#chart').evaluate((chart) => { chart.dataset.state = 'before'; });
  await action();
  await page.waitForSelector('#chart[data-state="ok"]', { timeout: WAIT_MS });
}

async function stopRefresh(page) {
  if (await page.isChecked('#refresh')) await page.uncheck('#refresh');
}

const pick = (page, list, name) => page.click(`#cardinality table[data-list="${list}"] tr[data-name="${name}"] button`);

/** Console errors and page errors; a 4xx/5xx that the test asked for is counted apart. */
function watchConsole(page) {
  const watch = { errors: [], expected: [], expecting: false };
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const text = message.text();
    if (watch.expecting && /Failed to load resource: .* status of [45]\d\d/.test(text)) watch.expected.push(text);
    else watch.errors.push(text);
  });
  page.on('pageerror', (error) => watch.errors.push(`page error: ${error.message}`));
  return watch;
}

/** The view without auth: opening, its numbers, every kind of click, its URL state. */
async function theView() {
  const { page, offsite, close } = await openBrowser();
  const watch = watchConsole(page);
  try {
    await page.goto(`${base}/?measurement=cpu&field=usage_user&range=6h`);
    await page.waitForSelector('#chart[data-state="ok"]', { timeout: WAIT_MS });
    await stopRefresh(page);
    check(await page.isHidden('#cardinality')
      && (await page.getAttribute('#cardinality-toggle', 'aria-pressed')) === 'false',
    'the Series view is closed by default');

    const counted = page.waitForRequest((r) => r.url().includes(`${CARDINALITY}?`), { timeout: WAIT_MS });
    await page.click('#cardinality-toggle');
    const limit = new URL((await counted).url()).searchParams.get('limit');
    check(limit === '10', 'opening the view asks the cardinality API for the top 10', limit);
    const url = new URL(page.url()).searchParams;
    check(url.get('cardinality') === 'open' && url.get('measurement') === 'cpu'
      && (await page.getAttribute('#cardinality-toggle', 'aria-pressed')) === 'true',
    'the URL keeps cardinality=open beside the view, and the Series button is pressed', page.url());
    await checkCounts(page, 'opened');

    // A measurement is chosen: tag keys and pairs are buttons too.
    let shown = await shownView(page);
    check(Object.values(shown.lists).every((rows) => rows.every((row) => row.button)),
      'with a measurement chosen every name is a button', shown.lists);

    let query = await nextQuery(page, () => redrawn(page, () => pick(page, 'series_by_tag', 'region=us')));
    check(query.get('measurement') === 'cpu' && query.getAll('tag').join() === 'region:us',
      'clicking the pair region=us adds the filter region:us to the chart', [...query]);
    check((await page.getAttribute('#chart', 'data-series-drawn')) === '2'
      && new URL(page.url()).searchParams.getAll('tag').join() === 'region:us',
    'the chart draws the two us hosts; the URL keeps the filter', page.url());

    query = await nextQuery(page, () => pick(page, 'series_by_field', 'http_requests.count'));
    check(query.get('measurement') === 'http_requests' && query.get('field') === 'count' && !query.has('tag'),
      'clicking http_requests.count charts that field of that measurement, without cpu\'s filter', [...query]);
    check((await page.inputValue('#measurement')) === 'http_requests' && (await page.inputValue('#field')) === 'count',
      'and the pickers show it');

    query = await nextQuery(page, () => pick(page, 'series_by_measurement', 'cpu'));
    check(query.get('measurement') === 'cpu' && !query.has('field'),
      'clicking the measurement cpu selects it (a chart of every field)', [...query]);
    check(await page.isVisible('#cardinality') && new URL(page.url()).searchParams.get('cardinality') === 'open',
      'the view stays open while the charts change', page.url());

    // A tag key starts a filter with that key: its values are offered.
    const values = page.waitForRequest((r) => r.url().includes('/api/v1/tag_values?'), { timeout: WAIT_MS });
    await pick(page, 'values_by_tag_key', 'hostname');
    const valuesQuery = new URL((await values).url()).searchParams;
    check(valuesQuery.get('key') === 'hostname' && valuesQuery.get('measurement') === 'cpu'
      && (await page.inputValue('#tag-key')) === 'hostname' && !(await page.isDisabled('#tag-value')),
    'clicking the tag key hostname puts it into the tag picker and lists its values', [...valuesQuery]);
    query = await nextQuery(page, () => page.click('.picker-list li[data-value="host_2"]', { timeout: WAIT_MS }));
    check(query.getAll('tag').join() === 'hostname:host_2', 'picking host_2 then filters by it', [...query]);

    // The state is the URL's: a reload shows the view again, Close and Back move through it.
    await page.reload();
    await checkCounts(page, 'after a reload');
    await page.click('#cardinality-close');
    check(await page.isHidden('#cardinality') && !new URL(page.url()).searchParams.has('cardinality'),
      'the view\'s × closes it and drops cardinality from the URL', page.url());
    await page.goBack();
    await page.waitForSelector('#cardinality[data-state="ok"]', { state: 'visible', timeout: WAIT_MS });
    check(new URL(page.url()).searchParams.get('cardinality') === 'open', 'Back opens it again', page.url());

    // Without a measurement, keys and pairs (counted over every measurement) are text.
    await page.goto(`${base}/?cardinality=open`);
    await checkCounts(page, 'without a measurement');
    shown = await shownView(page);
    check(shown.lists.series_by_measurement.every((row) => row.button)
      && shown.lists.series_by_tag.every((row) => !row.button)
      && shown.lists.values_by_tag_key.every((row) => !row.button),
    'without a measurement, measurements are buttons, tag keys and pairs are not', shown.lists);

    // An error is shown with the server's message; "Count again" recovers.
    watch.expecting = true;
    const fail = (route) => route.fulfill({ status: 503, contentType: 'application/json',
      body: JSON.stringify({ error: 'injected by the test: the store is busy' }) });
    const isCount = (u) => u.pathname === CARDINALITY;
    await page.route(isCount, fail);
    await page.click('#cardinality-reload');
    await page.waitForSelector('#cardinality[data-state="error"]', { timeout: WAIT_MS });
    const banner = await page.innerText('#cardinality-error');
    check(/injected by the test/.test(banner) && /503/.test(banner), 'a failed count shows the server\'s message', banner);
    await page.unroute(isCount, fail);
    watch.expecting = false;
    await page.click('#cardinality-reload');
    await checkCounts(page, 'counted again');
    check(await page.isHidden('#cardinality-error'), 'and the error goes away');

    await page.setViewportSize({ width: 390, height: 800 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    check(overflow <= 0, 'at 390 px the view fits the screen', overflow);

    check(offsite.length === 0, 'no request left loopback', offsite);
    check(watch.errors.length === 0, 'no console errors and no page errors', watch.errors);
    check(watch.expected.length >= 1, 'the error view came from a 503 answer', watch.expected);
  } finally {
    await close();
  }
}

/** The server runs with --auth and `token` is a read token. */
async function behindAuth() {
  const view = '/?measurement=cpu&field=usage_user&range=6h&cardinality=open';
  for (const [what, options] of [
    ['without credentials', {}],
    ['with an unknown token', { httpCredentials: { username: 'me', password: 'tt_not_a_token' } }],
  ]) {
    const { page, close } = await openBrowser(options);
    try {
      const answered = page.waitForResponse((r) => new URL(r.url()).pathname === '/', { timeout: WAIT_MS });
      // Headless, nobody can be asked: without credentials chromium gives up on the
      // challenge with ERR_INVALID_AUTH_CREDENTIALS (where a window would show its login
      // dialog); after wrong ones it shows the 401's body, the server's message.
      const loaded = await page.goto(`${base}${view}`).then(() => 'loaded', (error) => error.message);
      const response = await answered;
      const challenge = (await response.allHeaders())['www-authenticate'] || '';
      const body = loaded === 'loaded' ? await page.innerText('body') : '';
      check(response.status() === 401 && /^Basic realm=/.test(challenge)
        && (/ERR_INVALID_AUTH_CREDENTIALS/.test(loaded) || /API token/.test(body)),
      `${what} the page is refused with 401 and a Basic challenge`,
      { loaded, status: response.status(), challenge, body });
    } finally {
      await close();
    }
  }

  const { page, offsite, close } = await openBrowser({ httpCredentials: { username: 'dashboard', password: token } });
  const watch = watchConsole(page);
  const seen = [];
  page.on('response', (response) => {
    seen.push({ path: new URL(response.url()).pathname, status: response.status() });
  });
  try {
    const response = await page.goto(`${base}${view}`);
    check(response.status() === 200, 'with the read token as password the page loads', response.status());
    await page.waitForSelector('#chart[data-state="ok"]', { timeout: WAIT_MS });
    await stopRefresh(page);
    check((await page.getAttribute('#chart', 'data-series-drawn')) === '4',
      'the chart draws the four hosts\' usage_user', await page.getAttribute('#chart', 'data-series-drawn'));
    await checkCounts(page, 'behind --auth');
    const query = await nextQuery(page, () => redrawn(page, () => pick(page, 'series_by_measurement', 'http_requests')));
    check(query.get('measurement') === 'http_requests'
      && (await page.getAttribute('#chart', 'data-series-drawn')) === '4',
    'a click in the view charts http_requests, its four hosts drawn', [...query]);

    // The server answers these only with a token (the 401s above): 200 means the browser
    // sent the credentials on them. (Chromium adds the cached Basic header below what
    // playwright reports of a request's headers, so the header itself is not seen here.)
    const own = seen.filter((r) => r.path.startsWith('/api/') || r.path.startsWith('/assets/'));
    const kinds = ['/assets/', '/api/v1/schema', '/api/v1/query', CARDINALITY];
    check(kinds.every((kind) => own.some((r) => r.path.startsWith(kind) && r.status === 200)),
      'the page\'s scripts, schema, queries and counts were answered 200: they carried the token', own);
    check(own.every((r) => r.status === 200), 'none of the page\'s own requests was refused',
      own.filter((r) => r.status !== 200));
    check(offsite.length === 0, 'no request left loopback', offsite);
    check(watch.errors.length === 0, 'no console errors and no page errors', watch.errors);
  } finally {
    await close();
  }
}

try {
  if (token) await behindAuth();
  else await theView();
  console.log(`all ${checksPassed()} checks passed`);
} catch (error) {
  console.error(error.message);
  process.exitCode = 1;
}
