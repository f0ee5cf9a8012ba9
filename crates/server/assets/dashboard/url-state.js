// The view's state and its URL query string. The parameter names are a public contract
// (bookmarks, shared links and tests use them): db (the database; absent, the server's
// default database), measurement, field (repeatable: one chart
// per field, in order), tag (repeatable K:V), range or start/end, resolution, agg, display,
// refresh (on/off: auto-refresh as the user chose it; absent, the range's default),
// tz (local: times in the browser's zone; absent, UTC), cardinality (open: the Series
// view is shown; absent, closed), and targets (open: the Targets view is shown).
//
// Values are kept as the URL has them, even unknown ones: a bad `agg` in a link is sent
// to the API, whose error message is then shown, rather than silently replaced. `refresh`,
// `tz`, `cardinality` and `targets` are the exception, as no API reads them: an unknown value means
// the default.

export const RANGE_PRESETS = ['1h', '6h', '12h', '24h', '7d', '30d'];
export const RESOLUTIONS = ['auto', '1m', '5m', '1h', '1d'];
export const AGGREGATES = ['avg', 'min', 'max', 'sum', 'count', 'first', 'last'];
export const DISPLAYS = ['avg_per_sec', 'total'];
export const REFRESH_CHOICES = ['on', 'off'];
/** Time zones of the axis besides UTC, the default. */
export const TIME_ZONES = ['local'];
/** The Series (cardinality) view: open, or closed when absent. */
export const CARDINALITY_CHOICES = ['open'];
/** The Targets view: open, or closed when absent. */
export const TARGETS_CHOICES = ['open'];

export const DEFAULT_RANGE = '1h';
export const DEFAULT_RESOLUTION = 'auto';

/**
 * The state of a view. `fields` lists the charts, one per field, without repeats; empty is
 * one chart of every field. `range` is set for a "last N" view, `start` (and maybe `end`)
 * for a fixed one; never both. Empty strings mean "not chosen" (the server's default).
 */
export function emptyState() {
  return {
    db: '',
    measurement: '',
    fields: [],
    tags: [],
    range: DEFAULT_RANGE,
    start: '',
    end: '',
    resolution: DEFAULT_RESOLUTION,
    agg: '',
    display: '',
    refresh: '',
    tz: '',
    cardinality: '',
    targets: '',
  };
}

/** The state a query string describes (`location.search`). */
export function readState(search) {
  const params = new URLSearchParams(search);
  const state = emptyState();
  state.db = params.get('db') || '';
  state.measurement = params.get('measurement') || '';
  state.fields = uniqueFields(params.getAll('field'));
  state.tags = params.getAll('tag').filter((t) => t !== '');
  state.start = params.get('start') || '';
  state.end = params.get('end') || '';
  state.range = state.start ? '' : params.get('range') || DEFAULT_RANGE;
  state.resolution = params.get('resolution') || DEFAULT_RESOLUTION;
  state.agg = params.get('agg') || '';
  state.display = params.get('display') || '';
  const refresh = params.get('refresh') || '';
  state.refresh = REFRESH_CHOICES.includes(refresh) ? refresh : '';
  const tz = params.get('tz') || '';
  state.tz = TIME_ZONES.includes(tz) ? tz : '';
  const cardinality = params.get('cardinality') || '';
  state.cardinality = CARDINALITY_CHOICES.includes(cardinality) ? cardinality : '';
  const targets = params.get('targets') || '';
  state.targets = TARGETS_CHOICES.includes(targets) ? targets : '';
  return state;
}

/** The query string of `state` ("?measurement=…"), in a fixed parameter order. */
export function writeState(state) {
  const params = new URLSearchParams();
  if (state.db) params.set('db', state.db);
  if (state.measurement) params.set('measurement', state.measurement);
  for (const field of state.fields) params.append('field', field);
  for (const tag of state.tags) params.append('tag', tag);
  if (state.start) {
    params.set('start', state.start);
    if (state.end) params.set('end', state.end);
  } else {
    params.set('range', state.range || DEFAULT_RANGE);
  }
  params.set('resolution', state.resolution || DEFAULT_RESOLUTION);
  if (state.agg) params.set('agg', state.agg);
  if (state.display) params.set('display', state.display);
  if (state.refresh) params.set('refresh', state.refresh);
  if (state.tz) params.set('tz', state.tz);
  if (state.cardinality) params.set('cardinality', state.cardinality);
  if (state.targets) params.set('targets', state.targets);
  const text = params.toString();
  return text ? `?${text}` : '';
}

export function sameState(a, b) {
  return writeState(a) === writeState(b);
}

/** A copy of `state` with `changes` applied (lists copied, never shared). */
export function withChanges(state, changes) {
  const next = { ...state, tags: [...state.tags], fields: [...state.fields], ...changes };
  next.fields = uniqueFields(next.fields);
  return next;
}

/** `fields` without empty names and repeats (a second chart of a field adds nothing). */
export function uniqueFields(fields) {
  return [...new Set(fields.filter((f) => f !== ''))];
}
