// The dashboard's JavaScript in a real browser: Debian's chromium driven
// by playwright-core against a tickertape server that crates/server/tests/dashboard_browser.rs
// started and filled (see there for the data).
//
//   node dashboard.test.mjs http://127.0.0.1:PORT
//
// Environment: see harness.mjs. Prints one line per check; exits 1 on the first failed
// one, with what was expected and what was seen.

import { readFileSync } from 'node:fs';
import { check, checksPassed, openBrowser, serverUrl, WAIT_MS } from './harness.mjs';

const base = serverUrl('dashboard.test.mjs SERVER_URL');

// What the data written by dashboard_browser.rs holds.
const HOSTS_IN_EU = ['host_0', 'host_1'];

const { page, offsite, close } = await openBrowser({
  acceptDownloads: true,
  // A zone 5:45 off UTC: its round times are nobody else's (see the time zone checks).
  timezoneId: 'Asia/Kathmandu',
});
const consoleErrors = [];
const expectedHttpErrors = []; // "Failed to load resource" of a 4xx the test asked for
let expectingHttpError = false;
page.on('console', (message) => {
  if (message.type() !== 'error') return;
  const text = message.text();
  // Chromium itself logs every 4xx answer to a fetch; that is the error view under test.
  if (expectingHttpError && /Failed to load resource: .* status of 4\d\d/.test(text)) {
    expectedHttpErrors.push(text);
  } else consoleErrors.push(text);
});
page.on('pageerror', (error) => consoleErrors.push(`page error: ${error.message}`));

const responses = [];
page.on('response', (response) => {
  responses.push({ url: response.url(), status: response.status(), headers: response.headers() });
});

/** Runs `action`, then returns the query parameters of the next /api/v1/query request. */
async function nextQuery(action) {
  const request = page.waitForRequest((r) => r.url().includes('/api/v1/query?'), { timeout: WAIT_MS });
  await action();
  return new URL((await request).url()).searchParams;
}

function urlParams() {
  return new URL(page.url()).searchParams;
}

async function chartState() {
  return page.locator('#chart').evaluate((el) => ({ ...el.dataset }));
}

async function waitForChart(state) {
  await page.waitForSelector(`#chart[data-state="${state}"]`, { timeout: WAIT_MS });
}

/** Pixels of the plot area close to `hex` (a series colour): proof the line was drawn. */
async function pixelsOfColour(hex, canvasSelector = '#chart canvas') {
  return page.locator(canvasSelector).evaluate((canvas, colour) => {
    const want = [1, 3, 5].map((i) => parseInt(colour.slice(i, i + 2), 16));
    const ctx = canvas.getContext('2d');
    const { data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
    let count = 0;
    for (let i = 0; i < data.length; i += 4) {
      const near = want.every((c, k) => Math.abs(data[i + k] - c) <= 24);
      if (near) count += 1;
    }
    return count;
  }, hex);
}

async function legendLabels() {
  return page.locator('#legend li').allTextContents();
}

/**
 * Turns auto-refresh off, so that the next query is the one a control asked for and not a
 * refresh racing with it (auto-refresh has its own check).
 */
async function stopRefresh() {
  if (await page.isChecked('#refresh')) await page.uncheck('#refresh');
}

/**
 * Runs `action`, then collects the /api/v1/query requests that follow until there are
 * `count` of them (or WAIT_MS passed): their query parameters, in the order sent.
 */
async function nextQueries(action, count) {
  const seen = [];
  const listener = (request) => {
    if (request.url().includes('/api/v1/query?')) seen.push(new URL(request.url()).searchParams);
  };
  page.on('request', listener);
  try {
    await action();
    const deadline = Date.now() + WAIT_MS;
    while (seen.length < count && Date.now() < deadline) await page.waitForTimeout(50);
  } finally {
    page.off('request', listener);
  }
  return seen;
}

async function waitForPanel(chartId, state) {
  await page.waitForSelector(`#${chartId}[data-state="${state}"]`, { timeout: WAIT_MS });
}

/** The charts on the page, in order: [{field, title, state, seriesDrawn}]. */
async function panels() {
  return page.locator('.panel').evaluateAll((nodes) => nodes.map((node) => ({
    field: node.dataset.field,
    title: node.querySelector('.panel-title').textContent,
    state: node.querySelector('.chart').dataset.state,
    seriesDrawn: node.querySelector('.chart').dataset.seriesDrawn,
  })));
}

const isQueryUrl = (url) => url.pathname === '/api/v1/query';

/** The fields of one CSV line (RFC 4180 quoting). */
function parseCsvLine(line) {
  const fields = [];
  const pattern = /("(?:[^"]|"")*"|[^,]*)(,|$)/g;
  for (const match of line.matchAll(pattern)) {
    const raw = match[1];
    fields.push(raw.startsWith('"') ? raw.slice(1, -1).replace(/""/g, '"') : raw);
    if (match[2] === '') break;
  }
  return fields;
}

function spanMs(params) {
  return Date.parse(params.get('end')) - Date.parse(params.get('start'));
}

try {
  // 1. A view from a link, with data.
  const view = '/?measurement=cpu&field=usage_user&tag=region:eu&range=6h&resolution=auto';
  const first = await nextQuery(() => page.goto(`${base}${view}`));
  await waitForChart('ok');
  const home = responses.find((r) => r.url === `${base}${view}`);
  check(home && home.status === 200 && home.headers['content-type'].startsWith('text/html'),
    'GET / answers the page as text/html', home);
  const assets = responses.filter((r) => r.url.includes('/assets/'));
  check(assets.some((r) => r.url.endsWith('.js')) && assets.some((r) => r.url.endsWith('.css')),
    'the page loads its scripts and stylesheet from /assets/', assets.map((r) => r.url));
  for (const asset of assets) {
    const type = asset.headers['content-type'] || '';
    const wanted = asset.url.endsWith('.css') ? 'text/css' : 'text/javascript';
    check(asset.status === 200 && type.startsWith(wanted) && /immutable/.test(asset.headers['cache-control']),
      `${asset.url.split('/').pop()} is served as ${wanted}, cacheable`, asset);
  }
  check(first.get('measurement') === 'cpu' && first.get('field') === 'usage_user'
    && first.getAll('tag').join() === 'region:eu', 'the query carries the link\'s selection', [...first]);
  check(Number(first.get('max_points')) > 100 && !first.has('step'),
    'resolution auto asks for max_points of about the chart\'s width', first.get('max_points'));
  check(Math.abs(spanMs(first) - 6 * 3600e3) < 2000, 'range 6h asks for the last 6 hours', [...first]);
  check(first.get('merge') === 'true', 'the chart asks for merged series', first.get('merge'));

  const drawn = await chartState();
  check(drawn.seriesDrawn === String(HOSTS_IN_EU.length), 'the chart says it drew both eu series', drawn);
  check(Number(drawn.pointsDrawn) > 100, 'the chart drew the points of the range', drawn);
  const legend = await legendLabels();
  check(legend.length === 2 && HOSTS_IN_EU.every((h) => legend.some((l) => l.includes(`hostname=${h}`))),
    'the legend lists each series', legend);
  const blue = await pixelsOfColour('#4e79a7');
  const orange = await pixelsOfColour('#f28e2b');
  check(blue > 150 && orange > 150, 'both series\' colours are on the canvas', { blue, orange });

  // The dark theme, where the system asks for it: the chart redraws in its colours.
  await page.emulateMedia({ colorScheme: 'dark' });
  // The redraw follows the media change asynchronously: wait for it (at most 5 s), so a
  // slow machine is not taken for a light chart.
  const corner = () => page.locator('#chart canvas').evaluate((canvas) => {
    const [r, g, b] = canvas.getContext('2d').getImageData(2, 2, 1, 1).data;
    return r + g + b;
  });
  let darkCorner = await corner();
  for (let waited = 0; darkCorner >= 150 && waited < 5000; waited += 100) {
    await page.waitForTimeout(100);
    darkCorner = await corner();
  }
  const darkBlue = await pixelsOfColour('#4e79a7');
  check(darkCorner < 150 && darkBlue > 150, 'with a dark system theme the chart is dark, its series drawn',
    { darkCorner, darkBlue });
  await page.emulateMedia({ colorScheme: 'light' });

  // Hover: a tooltip with the time in UTC and local time, and a value per series.
  const box = await page.locator('#chart canvas').boundingBox();
  await page.mouse.move(box.x + box.width * 0.6, box.y + box.height * 0.5);
  const tooltip = await page.locator('.chart-tooltip').innerText();
  check(/UTC/.test(tooltip) && /local/.test(tooltip) && /host_0/.test(tooltip) && /host_1/.test(tooltip),
    'hovering shows the time (UTC and local) and each series\' value', tooltip);

  // 2. Controls change the request and the URL.
  check(await page.isChecked('#refresh'), 'auto-refresh is on by default for range 6h');
  await stopRefresh();
  let query = await nextQuery(() => page.selectOption('#agg', 'max'));
  check(query.get('agg') === 'max', 'choosing agg max asks for agg=max', [...query]);
  check(urlParams().get('agg') === 'max', 'the URL keeps agg=max', page.url());

  query = await nextQuery(() => page.click('#resolution button[data-value="5m"]'));
  check(query.get('step') === '5m' && !query.has('max_points'), 'resolution 5m asks for step=5m', [...query]);
  check(urlParams().get('resolution') === '5m', 'the URL keeps resolution=5m', page.url());

  query = await nextQuery(() => page.click('#range button[data-value="1h"]'));
  check(Math.abs(spanMs(query) - 3600e3) < 2000, 'range preset 1h asks for the last hour', [...query]);
  check(urlParams().get('range') === '1h', 'the URL keeps range=1h', page.url());
  check(query.get('agg') === 'max' && query.get('step') === '5m', 'other controls stay as chosen', [...query]);

  // A tag filter through the pickers: keys and values searched by prefix.
  const keys = page.waitForRequest((r) => r.url().includes('/api/v1/tag_keys?')
    && new URL(r.url()).searchParams.get('prefix') === 'host', { timeout: WAIT_MS });
  await page.click('#tag-key');
  await page.keyboard.type('host', { delay: 30 });
  const keysRequest = new URL((await keys).url()).searchParams;
  check(keysRequest.get('measurement') === 'cpu' && Number(keysRequest.get('limit')) > 0,
    'typing a tag key asks tag_keys by prefix, with a limit', [...keysRequest]);
  await page.click('.picker-list li[data-value="hostname"]', { timeout: WAIT_MS });
  const values = page.waitForRequest((r) => r.url().includes('/api/v1/tag_values?')
    && new URL(r.url()).searchParams.get('prefix') === 'host_1', { timeout: WAIT_MS });
  await page.keyboard.type('host_1', { delay: 30 });
  const valuesRequest = new URL((await values).url()).searchParams;
  check(valuesRequest.get('key') === 'hostname', 'typing a value asks tag_values of that key', [...valuesRequest]);
  query = await nextQuery(() => page.click('.picker-list li[data-value="host_1"]', { timeout: WAIT_MS }));
  check(query.getAll('tag').join() === 'region:eu,hostname:host_1',
    'picking a tag value adds tag=hostname:host_1 to the query', query.getAll('tag'));
  check(urlParams().getAll('tag').join() === 'region:eu,hostname:host_1', 'the URL keeps both tags', page.url());
  await waitForChart('ok');
  check((await chartState()).seriesDrawn === '1', 'the chart now draws one series', await chartState());

  // Back returns to the view before the filter.
  query = await nextQuery(() => page.goBack());
  check(query.getAll('tag').join() === 'region:eu', 'Back asks for the view before the filter', query.getAll('tag'));
  check(urlParams().getAll('tag').join() === 'region:eu', 'Back restores the URL', page.url());

  // The measurement picker searches by prefix.
  const measurements = page.waitForRequest((r) => r.url().includes('/api/v1/measurements?')
    && new URL(r.url()).searchParams.get('prefix') === 'http', { timeout: WAIT_MS });
  await page.fill('#measurement', '');
  await page.keyboard.type('http', { delay: 30 });
  await measurements;
  await page.waitForSelector('.picker-list li[data-value="http_requests"]', { timeout: WAIT_MS });
  check(true, 'typing a measurement lists the ones with that prefix');
  await page.keyboard.press('Escape');

  // Auto-refresh of a "last hour" view: a new query without touching anything else.
  const refreshed = await nextQuery(() => page.check('#refresh'));
  check(refreshed.get('agg') === 'max' && Math.abs(spanMs(refreshed) - 3600e3) < 2000,
    'switched on, auto-refresh queries the last hour again by itself', [...refreshed]);
  check(urlParams().get('refresh') === 'on', 'the URL keeps refresh=on', page.url());
  await stopRefresh();
  check(urlParams().get('refresh') === 'off', 'switched off, the URL keeps refresh=off', page.url());

  // Drag to zoom, double-click to zoom out.
  await page.click('#resolution button[data-value="auto"]');
  await waitForChart('ok');
  const plot = await page.locator('#chart canvas').boundingBox();
  query = await nextQuery(async () => {
    await page.mouse.move(plot.x + plot.width * 0.4, plot.y + plot.height / 2);
    await page.mouse.down();
    await page.mouse.move(plot.x + plot.width * 0.6, plot.y + plot.height / 2, { steps: 5 });
    await page.mouse.up();
  });
  const zoomed = spanMs(query);
  check(zoomed > 5 * 60e3 && zoomed < 20 * 60e3 && urlParams().has('start') && !urlParams().has('range'),
    'dragging across a fifth of the hour zooms to about 12 minutes (start/end in the URL)',
    { zoomed, url: page.url() });
  query = await nextQuery(() => page.mouse.dblclick(plot.x + plot.width / 2, plot.y + plot.height / 2));
  check(Math.abs(spanMs(query) - 2 * zoomed) < 2000, 'double-click zooms out to twice the range', spanMs(query));

  // 3. A counter: display avg/sec by default, total on request.
  query = await nextQuery(() => page.goto(`${base}/?measurement=http_requests&range=1h`));
  await waitForChart('ok');
  check(query.get('display') === 'avg_per_sec' && !query.has('agg'),
    'a counter is shown as avg/sec', [...query]);
  await stopRefresh();
  check(await page.isVisible('#display'), 'the display control is shown for a counter');
  query = await nextQuery(() => page.selectOption('#display', 'total'));
  check(query.get('display') === 'total' && urlParams().get('display') === 'total',
    'display total asks for display=total and keeps it in the URL', [...query]);

  // A link keeps the auto-refresh choice against the range's default (on up to 24h).
  await page.goto(`${base}/?measurement=cpu&field=usage_user&range=7d&refresh=on`);
  await waitForChart('ok');
  check(await page.isChecked('#refresh'), 'a 7d link with refresh=on auto-refreshes');
  await page.goto(`${base}/?measurement=cpu&field=usage_user&range=6h&refresh=off`);
  await waitForChart('ok');
  check(!(await page.isChecked('#refresh')), 'a 6h link with refresh=off does not');

  // Times: UTC by default, the browser's zone (Asia/Kathmandu, UTC+5:45) on request.
  await page.goto(`${base}/?measurement=cpu&field=usage_user&range=6h`);
  await waitForChart('ok');
  await stopRefresh();
  const tickMs = (tick) => Number((tick || '').split('@')[1]);
  const utcTick = (await chartState()).firstTick; // "label@ms"
  check(utcTick && tickMs(utcTick) % 1800e3 === 0, 'the time axis ticks on round UTC times by default', utcTick);
  query = await nextQuery(() => page.selectOption('#tz', 'local'));
  await page.waitForSelector('#chart[data-time-zone="local"][data-state="ok"]', { timeout: WAIT_MS });
  const localTick = (await chartState()).firstTick;
  check(tickMs(localTick) % 1800e3 === 900e3 && /:(00|30)$/.test(localTick.split('@')[0]),
    'in local time the axis ticks on round times of the browser\'s zone (UTC+5:45), labelled in it',
    localTick);
  check(urlParams().get('tz') === 'local' && !query.has('tz'),
    'the URL keeps tz=local; the query does not change', { url: page.url(), query: [...query] });
  const plotBox = await page.locator('#chart canvas').boundingBox();
  await page.mouse.move(plotBox.x + plotBox.width * 0.6, plotBox.y + plotBox.height * 0.5);
  const localTooltip = await page.locator('.chart-tooltip .tooltip-time').innerText();
  check(/local/.test(localTooltip), 'the tooltip gives the local time first', localTooltip);
  await page.mouse.move(0, 0);

  // 4. The table and the CSV: the chart's own answer.
  query = await nextQuery(() => page.goto(`${base}/?measurement=cpu&field=usage_user&tag=region:eu&range=6h&resolution=5m`));
  await waitForChart('ok');
  await stopRefresh();
  // The page's own query (absolute start and end) asked again: the answer it shows.
  const answer = await (await fetch(`${base}/api/v1/query?${query}`)).json();
  await page.click('#toggle-table');
  const rows = await page.locator('#table tbody tr').count();
  check(rows === Math.min(500, answer.times.length) && rows > 0, 'the table shows the answer\'s rows',
    { rows, times: answer.times.length });
  const download = page.waitForEvent('download', { timeout: WAIT_MS });
  await page.click('#download-csv');
  const file = await (await download).path();
  const csv = readFileSync(file, 'utf8').trim().split('\r\n');
  check(csv.length === answer.times.length + 1, 'the CSV has a header and one row per time',
    { lines: csv.length, times: answer.times.length });
  check(csv[0].startsWith('time,'), 'the CSV header starts with the time', csv[0]);
  const header = parseCsvLine(csv[0]);
  const firstRow = parseCsvLine(csv[1]);
  const firstTime = new Date(answer.times[0] / 1e6).toISOString().replace('.000Z', 'Z');
  check(firstRow[0] === firstTime, 'CSV times are RFC 3339 UTC', { csv: firstRow[0], want: firstTime });
  // Columns by name (measurement.field{tags}); the page orders them by name.
  const wanted = Object.fromEntries(answer.series.map((s) => [
    `${s.measurement}.${s.field}{${Object.entries(s.tags).map(([k, v]) => `${k}=${v}`).join(',')}}`,
    String(s.values[0] ?? ''),
  ]));
  const got = Object.fromEntries(header.slice(1).map((name, i) => [name, firstRow[i + 1]]));
  check(JSON.stringify(got, Object.keys(wanted).sort()) === JSON.stringify(wanted, Object.keys(wanted).sort())
    && header.length === answer.series.length + 1,
  'the CSV\'s first row holds the answer\'s values, column by series', { got, wanted });

  // 5. Relative times in the range boxes, as the API takes them, and the raw retention a
  // range crosses (dashboard_browser.rs gives unlisted measurements raw = 7d).
  const relative = await nextQuery(() => page.goto(`${base}/?measurement=cpu&field=usage_user&start=now-30d&end=now`));
  await waitForChart('ok');
  check(relative.get('start') === 'now-30d', 'a relative start goes to the API as written', relative.get('start'));
  await page.waitForFunction(() => /updated/.test(document.querySelector('#status').textContent), null, { timeout: WAIT_MS });
  const status = await page.innerText('#status');
  check(/raw points are kept 1w: before .* the rollups answer/.test(status),
    'a range past the raw retention says where the rollups answer', status);
  await nextQuery(() => page.goto(`${base}/?measurement=cpu&field=usage_user&start=-1h`));
  await waitForChart('ok');
  await page.waitForFunction(() => /updated/.test(document.querySelector('#status').textContent), null, { timeout: WAIT_MS });
  check(!/raw points are kept/.test(await page.innerText('#status')),
    'a range inside the raw retention says nothing of it', await page.innerText('#status'));

  // 6. Nothing in range, and errors, shown as messages.
  await page.goto(`${base}/?measurement=cpu&field=usage_user&start=2001-01-01T00:00:00Z&end=2001-01-02T00:00:00Z`);
  await waitForChart('empty');
  check(/No data in this range/.test(await page.innerText('.chart-message')), 'an empty range says so');

  expectingHttpError = true;
  await page.goto(`${base}/?measurement=cpu&field=usage_user&range=1h&agg=median`);
  await waitForChart('error');
  const banner = await page.innerText('#error');
  check(/agg/.test(banner) && /median/.test(banner) && /400/.test(banner),
    'an unknown agg in the link shows the server\'s message', banner);
  check(/median/.test(await page.innerText('.chart-message')), 'the chart area shows the error too');
  check((await chartState()).seriesDrawn === '0', 'and draws no series');

  await page.goto(`${base}/?measurement=cpu&tag=hostname&range=1h`);
  await waitForChart('error');
  check(/tag/.test(await page.innerText('#error')), 'a bad tag condition shows a message naming tag',
    await page.innerText('#error'));
  expectingHttpError = false;

  // 6. Several charts: one per `field` of the link, in its order, sharing the rest.
  // The usage_user query is held until the usage_system one is seen: were the charts asked
  // one after the other, the second would never be sent and this would time out.
  const twoFields = '/?measurement=cpu&field=usage_user&field=usage_system&tag=region:eu&range=6h';
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  const holdUser = async (route) => {
    if (new URL(route.request().url()).searchParams.get('field') === 'usage_user') await held;
    await route.continue();
  };
  await page.route(isQueryUrl, holdUser);
  const queryOf = (field) => page.waitForRequest((r) => r.url().includes('/api/v1/query?')
    && new URL(r.url()).searchParams.get('field') === field, { timeout: WAIT_MS });
  const userSent = queryOf('usage_user');
  const systemSent = queryOf('usage_system');
  await page.goto(`${base}${twoFields}`);
  const [userQuery, systemQuery] = (await Promise.all([userSent, systemSent]))
    .map((r) => new URL(r.url()).searchParams);
  check(true, 'the second chart\'s query is sent while the first one\'s is still open (in parallel)');
  release();
  for (const q of [userQuery, systemQuery]) {
    check(q.get('measurement') === 'cpu' && q.getAll('tag').join() === 'region:eu'
      && Math.abs(spanMs(q) - 6 * 3600e3) < 2000 && q.has('max_points') && q.getAll('field').length === 1,
    `the ${q.get('field')} chart asks for its one field with the shared tags, range and resolution`, [...q]);
  }
  await waitForPanel('chart', 'ok');
  await waitForPanel('chart-2', 'ok');
  await page.unroute(isQueryUrl, holdUser); // after its requests went on: both charts drew
  await stopRefresh();
  let shown = await panels();
  check(shown.map((p) => p.title).join() === 'cpu.usage_user,cpu.usage_system',
    'two charts, titled by their fields in the link\'s order', shown);
  check(shown.every((p) => p.seriesDrawn === '2'), 'each chart says it drew both eu series', shown);
  for (const canvas of ['#chart canvas', '#chart-2 canvas']) {
    const colours = { blue: await pixelsOfColour('#4e79a7', canvas), orange: await pixelsOfColour('#f28e2b', canvas) };
    check(colours.blue > 150 && colours.orange > 150, `both series' colours are on ${canvas}`, colours);
  }
  const legends = await page.locator('.panel .legend').evaluateAll((lists) => lists.map((l) => l.children.length));
  check(legends.join() === '2,2', 'each chart has its own legend', legends);
  check(await page.isVisible('#chart-2 ~ .data #download-csv-2'), 'each chart has its own points and CSV');

  // The second chart's CSV is its own answer: usage_system columns, one row per time.
  const systemAnswer = await (await fetch(`${base}/api/v1/query?${systemQuery}`)).json();
  const systemDownload = page.waitForEvent('download', { timeout: WAIT_MS });
  await page.click('#download-csv-2');
  const systemCsv = readFileSync(await (await systemDownload).path(), 'utf8').trim().split('\r\n');
  const systemHeader = parseCsvLine(systemCsv[0]).slice(1);
  check(systemHeader.length === 2 && systemHeader.every((name) => name.startsWith('cpu.usage_system{'))
    && systemCsv.length === systemAnswer.times.length + 1,
  'the second chart\'s CSV holds usage_system, one row per time of its answer',
  { header: systemHeader, lines: systemCsv.length, times: systemAnswer.times.length });

  // Hovering one chart shows its tooltip and the same time's crosshair on the other.
  const userBox = await page.locator('#chart canvas').boundingBox();
  const systemBox = await page.locator('#chart-2 canvas').boundingBox();
  await page.mouse.move(userBox.x + userBox.width * 0.5, userBox.y + userBox.height * 0.5);
  const crosshairs = await page.evaluate(() => ['chart', 'chart-2'].map((id) => {
    const line = document.querySelector(`#${id} .chart-crosshair`);
    return { hidden: line.hidden, linked: line.classList.contains('linked'), left: parseFloat(line.style.left) };
  }));
  check(await page.isVisible('#chart .chart-tooltip') && !(await page.isVisible('#chart-2 .chart-tooltip')),
    'hovering the first chart shows its tooltip only');
  check(!crosshairs[1].hidden && crosshairs[1].linked && Math.abs(crosshairs[1].left - crosshairs[0].left) <= 3,
    'and the second chart shows a crosshair at the same time', crosshairs);
  await page.mouse.move(userBox.x + userBox.width * 0.5, userBox.y + userBox.height + 40);
  check(await page.locator('#chart-2 .chart-crosshair').isHidden(), 'leaving the chart hides the other\'s crosshair');

  // Zooming either chart zooms both: the next queries of both charts and the URL.
  let pair = await nextQueries(async () => {
    await page.mouse.move(systemBox.x + systemBox.width * 0.4, systemBox.y + systemBox.height / 2);
    await page.mouse.down();
    await page.mouse.move(systemBox.x + systemBox.width * 0.6, systemBox.y + systemBox.height / 2, { steps: 5 });
    await page.mouse.up();
  }, 2);
  const zoomedTwo = spanMs(pair[0]);
  check(pair.length === 2 && pair.map((q) => q.get('field')).sort().join() === 'usage_system,usage_user',
    'dragging on the second chart queries both charts again', pair.map((q) => [...q]));
  check(pair[0].get('start') === pair[1].get('start') && pair[0].get('end') === pair[1].get('end')
    && zoomedTwo > 40 * 60e3 && zoomedTwo < 110 * 60e3,
  'both ask for the same zoomed range, about a fifth of 6 hours', pair.map((q) => [q.get('start'), q.get('end')]));
  check(urlParams().get('start') === pair[0].get('start') && !urlParams().has('range')
    && urlParams().getAll('field').join() === 'usage_user,usage_system',
  'the URL has the zoomed start and end, and still both fields', page.url());
  pair = await nextQueries(() => page.mouse.dblclick(userBox.x + userBox.width / 2, userBox.y + userBox.height / 2), 2);
  check(pair.length === 2 && pair.every((q) => Math.abs(spanMs(q) - 2 * zoomedTwo) < 2000)
    && pair[0].get('start') === pair[1].get('start'),
  'double-click on the first chart zooms both out to twice the range', pair.map((q) => spanMs(q)));
  await waitForPanel('chart', 'ok');
  await waitForPanel('chart-2', 'ok');

  // A chart's field changed in place: the pencil opens a field picker in its head.
  const idleList = page.waitForRequest((r) => r.url().includes('/api/v1/fields?')
    && new URL(r.url()).searchParams.get('prefix') === 'usage_i', { timeout: WAIT_MS });
  await page.click('.panel[data-field="usage_system"] .panel-edit');
  await page.fill('.panel[data-field="usage_system"] .panel-field', '');
  await page.keyboard.type('usage_i', { delay: 30 });
  await idleList;
  const idleSent = queryOf('usage_idle');
  await page.click('.picker-list li[data-value="usage_idle"]', { timeout: WAIT_MS });
  const idleQuery = new URL((await idleSent).url()).searchParams;
  await waitForPanel('chart-2', 'ok');
  shown = await panels();
  check(urlParams().getAll('field').join() === 'usage_user,usage_idle' && idleQuery.get('field') === 'usage_idle'
    && shown.map((p) => p.title).join() === 'cpu.usage_user,cpu.usage_idle',
  'changing the second chart\'s field to usage_idle replaces it in place, in the URL and the query',
  { url: page.url(), shown });
  await nextQuery(() => page.goBack());
  await waitForPanel('chart-2', 'ok');
  check(urlParams().getAll('field').join() === 'usage_user,usage_system', 'Back brings usage_system back', page.url());

  // Removing and adding charts through the page changes the URL's field list.
  pair = await nextQueries(() => page.click('.panel[data-field="usage_user"] .panel-remove'), 1);
  check(urlParams().getAll('field').join() === 'usage_system' && pair[0].get('field') === 'usage_system',
    'removing the usage_user chart leaves field=usage_system in the URL and the query', page.url());
  shown = await panels();
  check(shown.length === 1 && !(await page.isVisible('.panel-remove')) && await page.isVisible('#field')
    && (await page.inputValue('#field')) === 'usage_system',
  'one chart left: no remove button, and the Field picker shows its field', shown);
  const fieldList = page.waitForRequest((r) => r.url().includes('/api/v1/fields?')
    && new URL(r.url()).searchParams.get('prefix') === 'usage_u', { timeout: WAIT_MS });
  await page.click('#add-field');
  await page.keyboard.type('usage_u', { delay: 30 });
  await fieldList;
  pair = await nextQueries(() => page.click('.picker-list li[data-value="usage_user"]', { timeout: WAIT_MS }), 2);
  check(urlParams().getAll('field').join() === 'usage_system,usage_user',
    'adding a usage_user chart appends field=usage_user to the URL', page.url());
  check(pair.map((q) => q.get('field')).sort().join() === 'usage_system,usage_user', 'and both charts query',
    pair.map((q) => q.get('field')));
  await waitForPanel('chart-2', 'ok');
  shown = await panels();
  check(shown.map((p) => p.field).join() === 'usage_system,usage_user' && shown[1].state === 'ok',
    'the added chart comes last and draws', shown);
  await nextQuery(() => page.goBack());
  check(urlParams().getAll('field').join() === 'usage_system', 'Back removes the added chart again', page.url());

  // Auto-refresh refreshes every chart.
  await page.goto(`${base}${twoFields}`);
  await waitForPanel('chart-2', 'ok');
  pair = await nextQueries(async () => {
    await stopRefresh();
    await page.check('#refresh');
  }, 2);
  check(pair.map((q) => q.get('field')).sort().join() === 'usage_system,usage_user',
    'auto-refresh queries both charts again', pair.map((q) => q.get('field')));
  await stopRefresh();

  // A chart without data, or whose query fails, does not blank the other.
  await page.goto(`${base}/?measurement=cpu&field=usage_user&field=no_such_field&tag=region:eu&range=6h`);
  await waitForPanel('chart-2', 'empty');
  await waitForPanel('chart', 'ok');
  check(/No data/.test(await page.innerText('#chart-2 .chart-message')) && await pixelsOfColour('#4e79a7') > 150,
    'a field without data says so on its chart; the other chart still draws');
  expectingHttpError = true;
  const failSystem = (route) => (new URL(route.request().url()).searchParams.get('field') === 'usage_system'
    ? route.fulfill({ status: 400, contentType: 'application/json',
      body: JSON.stringify({ error: 'injected by the test: usage_system is unavailable' }) })
    : route.continue());
  await page.route(isQueryUrl, failSystem);
  await page.goto(`${base}${twoFields}`);
  await waitForPanel('chart-2', 'error');
  await waitForPanel('chart', 'ok');
  await stopRefresh();
  const systemError = await page.innerText('#error-2');
  check(/injected by the test/.test(systemError) && /400/.test(systemError) && await page.isHidden('#error'),
    'a failed query shows its message on that chart only', systemError);
  const stillBlue = await pixelsOfColour('#4e79a7');
  check(stillBlue > 150 && (await chartState()).seriesDrawn === '2', 'and the other chart still draws', stillBlue);
  await page.unroute(isQueryUrl, failSystem);
  expectingHttpError = false;

  // 6. A phone's width: the chart still draws.
  await page.setViewportSize({ width: 390, height: 800 });
  await page.goto(`${base}/?measurement=cpu&field=usage_user&range=6h`);
  await waitForChart('ok');
  const phoneCanvas = await page.locator('#chart canvas').boundingBox();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(phoneCanvas.width <= 390 && overflow <= 0, 'at 390 px the page fits the screen', { phoneCanvas, overflow });
  await page.goto(`${base}${twoFields}`);
  await waitForPanel('chart', 'ok');
  await waitForPanel('chart-2', 'ok');
  const stacked = [await page.locator('#chart').boundingBox(), await page.locator('#chart-2').boundingBox()];
  const phoneOverflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(stacked.every((b) => b.width <= 390 && b.width > 300) && stacked[1].y >= stacked[0].y + stacked[0].height
    && phoneOverflow <= 0, 'at 390 px two charts are stacked, each the screen\'s width', { stacked, phoneOverflow });

  check(offsite.length === 0, 'no request left loopback', offsite);
  check(consoleErrors.length === 0, 'no console errors and no page errors', consoleErrors);
  check(expectedHttpErrors.length >= 2, 'the error views came from 4xx answers', expectedHttpErrors);
  console.log(`all ${checksPassed()} checks passed`);
} catch (error) {
  console.error(error.message);
  if (consoleErrors.length) console.error(`console errors so far: ${JSON.stringify(consoleErrors)}`);
  process.exitCode = 1;
} finally {
  await close();
}
