// The dashboard's databases picker in a real browser, against a server that
// crates/server/tests/dashboard_browser.rs started and filled (see there for the data):
//
//   node databases.test.mjs http://127.0.0.1:PORT single  # only the default database
//   node databases.test.mjs http://127.0.0.1:PORT         # the default one and `app`
//
// With one database the picker stays hidden and no request names a database. With two:
// the picker lists them; choosing one puts `db` in the URL, empties the measurement,
// field and tag pickers, and every data request (listings, queries, counts) names it;
// reload and Back keep to the URL; the Series view counts the chosen database and lists
// every database's series, a click choosing one; an unknown `db` in a link is shown as
// such with the server's 404. Environment: see harness.mjs. Exits 1 on the first failed
// check.

import { check, checksPassed, openBrowser, serverUrl, WAIT_MS } from './harness.mjs';

const base = serverUrl('databases.test.mjs SERVER_URL [single]');
const single = process.argv[3] === 'single';

// The default database (`tickertape`) holds cpu (3 fields of host_0…host_3) and
// http_requests (count of the same hosts): 16 series. `app` holds cpu's usage_user of
// app_0 and app_1 and jobs' waiting of queue q1: 3 series.
const DEFAULT_SERIES = 16;
const APP = { series: 3, measurements: 2, fields: 2, tag_pairs: 3 };

const DATA_PATHS = ['/api/v1/query', '/api/v1/measurements', '/api/v1/fields', '/api/v1/tag_keys',
  '/api/v1/tag_values', '/api/v1/status/cardinality'];

/** Every data request the page sends, as URLs, to check which database each names. */
function recordRequests(page) {
  const seen = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (DATA_PATHS.includes(url.pathname)) seen.push(url);
  });
  return seen;
}

function watchConsole(page) {
  const watch = { errors: [], expected: [], expecting: false };
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const text = message.text();
    if (watch.expecting && /Failed to load resource: .* status of 404/.test(text)) watch.expected.push(text);
    else watch.errors.push(text);
  });
  page.on('pageerror', (error) => watch.errors.push(`page error: ${error.message}`));
  return watch;
}

/** Runs `action`, then returns the URL of the next request to `path`. */
async function nextRequest(page, path, action) {
  const request = page.waitForRequest((r) => new URL(r.url()).pathname === path, { timeout: WAIT_MS });
  await action();
  return new URL((await request).url());
}

async function stopRefresh(page) {
  if (await page.isChecked('#refresh')) await page.uncheck('#refresh');
}

/** The picker's options as [value, text], and its value. */
async function pickerShown(page) {
  return page.evaluate(() => {
    const select = document.getElementById('database');
    return {
      hidden: document.getElementById('database-picker').hidden,
      options: [...select.options].map((o) => [o.value, o.textContent]),
      value: select.value,
    };
  });
}

async function waitForDatabases(page) {
  await page.waitForSelector('#database-picker[data-state]', { state: 'attached', timeout: WAIT_MS });
}

async function legendHosts(page) {
  const labels = await page.locator('#legend li').allTextContents();
  return labels.map((label) => (/hostname=(\w+)/.exec(label) || [])[1]).filter(Boolean).sort();
}

/** The Series view's totals and its list of databases. */
async function seriesView(page) {
  await page.waitForSelector('#cardinality[data-state="ok"]', { timeout: WAIT_MS });
  return page.evaluate(() => ({
    totals: Object.fromEntries([...document.querySelectorAll('#cardinality [data-total]')]
      .map((node) => [node.dataset.total, node.textContent])),
    databases: [...document.querySelectorAll('#cardinality table[data-list="series_by_database"] tbody tr[data-name]')]
      .map((row) => ({ name: row.dataset.name, series: Number(row.dataset.count), current: row.getAttribute('aria-current') === 'true' })),
    head: document.getElementById('cardinality-database').textContent,
  }));
}

async function oneDatabase() {
  const { page, offsite, close } = await openBrowser();
  const watch = watchConsole(page);
  const requests = recordRequests(page);
  try {
    await page.goto(`${base}/?measurement=cpu&field=usage_user&range=6h&cardinality=open`);
    await page.waitForSelector('#chart[data-state="ok"]', { timeout: WAIT_MS });
    await waitForDatabases(page);
    const shown = await pickerShown(page);
    check((await page.getAttribute('#database-picker', 'data-state')) === 'ok' && shown.hidden,
      'with only the default database the server lists, the picker is hidden', shown);
    const view = await seriesView(page);
    check(view.databases.length === 0 && view.head === '' && view.totals.series === String(DEFAULT_SERIES),
      'the Series view counts the store as before, without a list of databases', view);
    check(requests.length >= 2 && requests.every((url) => !url.searchParams.has('db')),
      'no data request names a database', requests.map(String));
    check(offsite.length === 0, 'no request left loopback', offsite);
    check(watch.errors.length === 0, 'no console errors and no page errors', watch.errors);
  } finally {
    await close();
  }
}

async function twoDatabases() {
  const { page, offsite, close } = await openBrowser();
  const watch = watchConsole(page);
  const requests = recordRequests(page);
  try {
    // A view of the default database, from a link without `db`.
    await page.goto(`${base}/?measurement=cpu&field=usage_user&tag=region:eu&range=6h`);
    await page.waitForSelector('#chart[data-state="ok"]', { timeout: WAIT_MS });
    await stopRefresh(page);
    await waitForDatabases(page);
    let shown = await pickerShown(page);
    check(!shown.hidden && JSON.stringify(shown.options) === JSON.stringify([['', 'tickertape (default)'], ['app', 'app']])
      && shown.value === '',
    'the picker lists the default database and app, the default chosen', shown);
    check(JSON.stringify(await legendHosts(page)) === JSON.stringify(['host_0', 'host_1'])
      && requests.every((url) => !url.searchParams.has('db')),
    'the default database\'s eu hosts are charted, no request naming a database', requests.map(String));

    // Choosing app: a new selection in app, everything asked of app.
    await page.selectOption('#database', 'app');
    await page.waitForSelector('#chart[data-state="idle"]', { timeout: WAIT_MS });
    let url = new URL(page.url()).searchParams;
    check(url.get('db') === 'app' && !url.has('measurement') && !url.has('field') && !url.has('tag')
      && url.get('range') === '6h',
    'choosing app puts db=app in the URL and drops measurement, field and tags (the range stays)', page.url());
    check((await page.inputValue('#measurement')) === '' && (await page.inputValue('#field')) === ''
      && (await page.locator('#tag-chips li').count()) === 0,
    'the measurement, field and tag pickers are emptied');
    const listing = await nextRequest(page, '/api/v1/measurements', () => page.focus('#measurement'));
    await page.waitForSelector('.picker-list li[data-value="jobs"]', { timeout: WAIT_MS });
    const offered = await page.locator('.picker-list:visible li[data-value]').evaluateAll((nodes) => nodes.map((n) => n.dataset.value));
    check(listing.searchParams.get('db') === 'app' && JSON.stringify(offered) === JSON.stringify(['cpu', 'jobs']),
      'the measurement picker lists app\'s measurements (db=app)', { listing: String(listing), offered });
    const query = await nextRequest(page, '/api/v1/query', () => page.click('.picker-list li[data-value="cpu"]'));
    await page.waitForSelector('#chart[data-state="ok"]', { timeout: WAIT_MS });
    await stopRefresh(page);
    check(query.searchParams.get('db') === 'app' && query.searchParams.get('measurement') === 'cpu',
      'the chart\'s query names db=app', String(query));
    check(JSON.stringify(await legendHosts(page)) === JSON.stringify(['app_0', 'app_1']),
      'the chart draws app\'s cpu (app_0, app_1), not the default database\'s', await legendHosts(page));
    const keys = await nextRequest(page, '/api/v1/tag_keys', () => page.focus('#tag-key'));
    check(keys.searchParams.get('db') === 'app', 'the tag key picker lists app\'s keys', String(keys));
    await page.locator('#tag-key').blur();

    // The URL is the state: a reload keeps app, Back returns to the default database.
    const reloaded = await nextRequest(page, '/api/v1/query', () => page.reload());
    await waitForDatabases(page);
    shown = await pickerShown(page);
    check(reloaded.searchParams.get('db') === 'app' && shown.value === 'app',
      'after a reload the picker shows app and the query names it', { query: String(reloaded), shown });
    await page.waitForSelector('#chart[data-state="ok"]', { timeout: WAIT_MS });
    await stopRefresh(page);
    await page.goBack(); // app, no measurement
    const back = await nextRequest(page, '/api/v1/query', () => page.goBack()); // the first view
    await page.waitForSelector('#chart[data-state="ok"]', { timeout: WAIT_MS });
    shown = await pickerShown(page);
    check(!back.searchParams.has('db') && back.searchParams.getAll('tag').join() === 'region:eu' && shown.value === ''
      && JSON.stringify(await legendHosts(page)) === JSON.stringify(['host_0', 'host_1']),
    'Back returns to the default database\'s view, its query naming no database', { query: String(back), shown });

    // The raw retention a range crosses is the chosen database's: app was created WITH
    // DURATION 3d, the default database keeps the config's raw = 7d.
    for (const [db, kept] of [['app', '3d'], ['', '1w']]) {
      const dbParam = db ? `db=${db}&` : '';
      const schema = await nextRequest(page, '/api/v1/schema',
        () => page.goto(`${base}/?${dbParam}measurement=cpu&field=usage_user&start=now-30d&end=now`));
      await page.waitForFunction(() => /updated/.test(document.querySelector('#status').textContent), null, { timeout: WAIT_MS });
      const status = await page.innerText('#status');
      check((schema.searchParams.get('db') || '') === db && new RegExp(`raw points are kept ${kept}: before`).test(status),
        `over 30 days of ${db || 'the default database'} the status names its raw retention, ${kept}`, { schema: String(schema), status });
    }

    // The Series view of app: app's counts and every database's series.
    const counted = await nextRequest(page, '/api/v1/status/cardinality', () => page.goto(`${base}/?db=app&cardinality=open`));
    let view = await seriesView(page);
    const wantApp = Object.fromEntries(Object.entries(APP).map(([k, v]) => [k, String(v)]));
    check(counted.searchParams.get('db') === 'app' && JSON.stringify(view.totals) === JSON.stringify(wantApp),
      'the Series view counts app (db=app): 3 series, 2 measurements, 2 fields, 3 tag pairs', { url: String(counted), view });
    const byName = Object.fromEntries(view.databases.map((d) => [d.name, d]));
    check(view.databases.length === 2 && byName.app?.series === APP.series && byName.app?.current
      && byName.tickertape?.series === DEFAULT_SERIES && !byName.tickertape?.current,
    'it lists the series of each database, app marked as the chosen one', view.databases);
    check(view.head === `database app · ${DEFAULT_SERIES + APP.series} series in all 2 databases`,
      'its head names the database and the series of all of them', view.head);
    const recount = await nextRequest(page, '/api/v1/status/cardinality',
      () => page.click('#cardinality table[data-list="series_by_database"] tr[data-name="tickertape"] button'));
    view = await seriesView(page);
    url = new URL(page.url()).searchParams;
    check(!recount.searchParams.has('db') && !url.has('db') && url.get('cardinality') === 'open'
      && view.totals.series === String(DEFAULT_SERIES) && view.databases.find((d) => d.current)?.name === 'tickertape',
    'clicking tickertape there chooses the default database: no db in the URL, its 16 series counted', { url: page.url(), view });
    check((await pickerShown(page)).value === '', 'and the picker shows the default database');

    // A link to a database that does not exist: kept, shown as unknown, the 404 shown.
    watch.expecting = true;
    await page.goto(`${base}/?db=nope&measurement=cpu&field=usage_user`);
    await page.waitForSelector('#chart[data-state="error"]', { timeout: WAIT_MS });
    await waitForDatabases(page);
    shown = await pickerShown(page);
    const error = await page.innerText('#error');
    check(shown.value === 'nope' && shown.options.some(([v, text]) => v === 'nope' && text === 'nope (unknown)')
      && /database not found/.test(error),
    'db=nope is shown as an unknown database and the chart shows the server\'s "database not found"', { shown, error });
    watch.expecting = false;

    check(offsite.length === 0, 'no request left loopback', offsite);
    check(watch.errors.length === 0, 'no console errors and no page errors', watch.errors);
    check(watch.expected.length >= 1, 'the unknown database\'s error came from a 404 answer', watch.expected);
  } finally {
    await close();
  }
}

try {
  if (single) await oneDatabase();
  else await twoDatabases();
  console.log(`${checksPassed()} checks passed`);
} catch (error) {
  console.error(error.stack || String(error));
  process.exit(1);
}
