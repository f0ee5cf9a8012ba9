// The HTTP API the page talks to, on its own origin: the databases, the listing endpoints
// for the pickers, the schema (which measurements are counters), the query, and the series
// counts of the Series view. Plain same-origin fetches: behind `serve --auth` the browser
// sends the Basic credentials it was asked for when the page loaded.
//
// The database is set here, once, for every request about data (listings, query, counts):
// `useDatabase` before a view's requests, so no caller can forget its `db`.

import { isoUtc, parseDurationMs } from './time-format.js';

/** The database the data requests name ('' = none: the server's default database). */
let database = '';

/** Makes every later data request name database `name` ('' for the default one). */
export function useDatabase(name) {
  database = name || '';
}

/** `params` with the chosen database's `db`, if one is chosen. */
function inDatabase(params) {
  return database ? [...params, ['db', database]] : params;
}

/** An answer that is not 2xx, with the server's `{"error": …}` message when it sent one. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
  }
}

/** GET `path` with `params` ([name, value] pairs); the body's text. Throws ApiError. */
async function getText(path, params, signal) {
  const url = `${path}?${new URLSearchParams(params)}`;
  let response;
  try {
    response = await fetch(url, { signal, headers: { Accept: 'application/json' } });
  } catch (error) {
    if (error.name === 'AbortError') throw error;
    throw new ApiError(0, `cannot reach the server (${error.message})`);
  }
  const text = await response.text();
  if (!response.ok) throw new ApiError(response.status, errorMessage(response, text));
  return text;
}

function errorMessage(response, text) {
  try {
    const body = JSON.parse(text);
    if (body && typeof body.error === 'string') return body.error;
  } catch {
    // Not JSON (a proxy's page, a 404 of a route this server lacks): status line below.
  }
  return `HTTP ${response.status} ${response.statusText || ''}`.trim();
}

async function getJson(path, params, signal) {
  const text = await getText(path, params, signal);
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(200, `the server's answer to ${path} is not JSON`);
  }
}

/** How many names a picker asks for; it says so when there are more. */
export const LIST_LIMIT = 50;

/**
 * One of the listing endpoints: `{items, truncated}`. `kind` is "measurements",
 * "fields", "tag_keys" or "tag_values"; `scope` the measurement (and key) it is about.
 */
export async function listNames(kind, scope, prefix, signal) {
  const params = [];
  if (scope.measurement !== undefined) params.push(['measurement', scope.measurement]);
  if (scope.key !== undefined) params.push(['key', scope.key]);
  if (prefix) params.push(['prefix', prefix]);
  params.push(['limit', String(LIST_LIMIT)]);
  const body = await getJson(`/api/v1/${kind}`, inDatabase(params), signal);
  const items = Array.isArray(body[kind]) ? body[kind] : [];
  return { items, truncated: body.truncated === true };
}

/**
 * `GET /api/v1/schema` of the chosen database: the names of the counter measurements
 * (kind = "counter"), and `rawRetentionMs(name)`, how long a measurement keeps raw points
 * in that database (null: for good) — its own retention, else the database's default
 * retention policy, else the defaults' (the server resolves it).
 */
export async function loadSchema(signal) {
  const body = await getJson('/api/v1/schema', inDatabase([]), signal);
  const counters = new Set();
  const listed = body.measurements || {};
  for (const [name, schema] of Object.entries(listed)) {
    if (schema && schema.kind === 'counter') counters.add(name);
  }
  const rawOf = (schema) => (schema && schema.retention ? schema.retention.raw : undefined);
  const rawRetentionMs = (name) => {
    const text = Object.hasOwn(listed, name) ? rawOf(listed[name]) : rawOf(body.default);
    if (!text) return null;
    const ms = durationMs(String(text).replace(/(\d+)y/, (_, n) => `${Number(n) * 365}d`));
    return Number.isFinite(ms) ? ms : null;
  };
  return { counters, rawRetentionMs };
}

/**
 * `GET /api/v1/status/cardinality?limit=N`: the chosen database's totals (series,
 * measurements, fields, tag_pairs) and the `limit` largest of series_by_measurement,
 * series_by_field, values_by_tag_key and series_by_tag, largest first; and the series of
 * every database (series_in_all_databases, series_by_database).
 */
export async function cardinality(limit, signal) {
  return getJson('/api/v1/status/cardinality', inDatabase([['limit', String(limit)]]), signal);
}

/**
 * `GET /prometheus/api/v1/targets`: what the server scrapes, in Prometheus' shape
 * (`data.activeTargets`, `data.droppedTargets`); empty lists when it scrapes nothing.
 */
export async function scrapeTargets(signal) {
  return getJson('/prometheus/api/v1/targets', [], signal);
}

/**
 * `GET /api/v1/databases`: `{names, defaultName}`, the names sorted, the default database's
 * among them.
 */
export async function listDatabases(signal) {
  const body = await getJson('/api/v1/databases', [], signal);
  const names = Array.isArray(body.databases) ? body.databases.filter((n) => typeof n === 'string') : [];
  const defaultName = typeof body.default === 'string' ? body.default : '';
  if (defaultName && !names.includes(defaultName)) names.push(defaultName);
  return { names: names.sort(), defaultName };
}

/** The range a state stands for, in milliseconds; `end` is "now" for a "last N" view. */
export function viewRange(state, nowMs) {
  if (state.start) {
    const start = parseTimeMs(state.start, nowMs);
    const end = state.end ? parseTimeMs(state.end, nowMs) : nowMs;
    return { startMs: start, endMs: end };
  }
  const length = parseDurationMs(state.range) ?? 3600e3;
  return { startMs: nowMs - length, endMs: nowMs };
}

/**
 * A time as the API takes it → ms; NaN if it is none: RFC 3339, integer nanoseconds, or
 * relative to `nowMs` — `now`, `now-30d`, `now+5m`, `-1h` (for now-1h), a duration being
 * runs of a number and a unit (ms s m h d w, as `1h30m`).
 */
export function parseTimeMs(text, nowMs) {
  const trimmed = String(text).trim();
  if (/^-?\d+$/.test(trimmed)) return Number(BigInt(trimmed) / 1000000n);
  const relative = /^(?:now(?:([+-])(.+))?|-(.+))$/.exec(trimmed);
  if (relative) {
    const [, sign, after, shorthand] = relative;
    if (shorthand !== undefined) return nowMs - durationMs(shorthand);
    if (sign === undefined) return nowMs;
    return sign === '+' ? nowMs + durationMs(after) : nowMs - durationMs(after);
  }
  return Date.parse(trimmed);
}

/** `1h30m`, `30d`, `500ms` → ms; NaN for anything else. */
function durationMs(text) {
  const unit = { ms: 1, s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 };
  const parts = [...text.matchAll(/(\d+)(ms|s|m|h|d|w)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) return NaN;
  return parts.reduce((total, [, n, u]) => total + Number(n) * unit[u], 0);
}

/**
 * The parameters of `/api/v1/query` for one chart of a view (`field`, or '' for every
 * field; the view's other parameters are shared by its charts): merged on one time axis (what the chart,
 * the table and the CSV share). Resolution `auto` asks for about one point per pixel of
 * the plot (`max_points`, the server's zoom table picks the step and the rollup); a fixed
 * resolution is the window `step`. Counters are shown through `display` (avg/sec by
 * default), which implies the sum per window.
 */
export function queryParams(state, field, { nowMs, plotWidth, isCounter }) {
  const params = [['measurement', state.measurement]];
  if (field) params.push(['field', field]);
  for (const tag of state.tags) params.push(['tag', tag]);
  if (state.start) {
    // Without an end a fixed range runs up to now, as the chart's axis does.
    params.push(['start', state.start], ['end', state.end || isoUtc(nowMs)]);
  } else {
    const { startMs, endMs } = viewRange(state, nowMs);
    params.push(['start', isoUtc(startMs)], ['end', isoUtc(endMs)]);
  }
  if (state.resolution === 'auto' || !state.resolution) {
    params.push(['max_points', String(Math.max(2, Math.min(5000, Math.round(plotWidth))))]);
  } else {
    params.push(['step', state.resolution]);
  }
  const display = state.display || (isCounter ? 'avg_per_sec' : '');
  // Under display the server sums; an explicit agg is still sent so that a contradiction
  // in a link is reported by the server rather than hidden here.
  if (display) params.push(['display', display]);
  if (state.agg || !display) params.push(['agg', state.agg || 'avg']);
  params.push(['merge', 'true']);
  return params;
}

/**
 * Runs a query with `merge=true`: `{times, timesText, series}` where `times` are ms (for
 * drawing) and `timesText` the exact nanosecond decimals the server sent (for the table
 * and the CSV; JSON.parse would round them to doubles).
 */
export async function runQuery(params, signal) {
  const text = await getText('/api/v1/query', inDatabase(params), signal);
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError(200, "the server's answer to the query is not JSON");
  }
  const timesText = exactTimes(text, body.times.length);
  return {
    times: timesText.map((t) => Number(BigInt(t) / 1000n) / 1000),
    timesText,
    series: body.series || [],
  };
}

/** The decimal text of the `"times":[…]` array of a merged answer, element by element. */
function exactTimes(text, count) {
  const match = /"times":\[([-0-9,]*)\]/.exec(text);
  const parts = match && match[1] ? match[1].split(',') : [];
  if (parts.length !== count) throw new ApiError(200, 'unexpected shape of the query answer');
  return parts;
}
