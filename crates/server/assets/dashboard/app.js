// The dashboard: one chart per field of the URL's state (one chart of every field when it
// names none), MMS's controls above them, shared by all: database (when the server has
// more than one), measurement, tags, range, resolution, aggregate, display. Each chart (panel.js) has its own legend and points and
// runs its own query, all in parallel. Zooming any chart zooms them all, as they share
// the range; hovering one shows the crosshair on the others. The Series view
// (cardinality.js), opened from the header, counts what the store holds; its names put
// themselves into the pickers above. The Targets view (targets.js) shows what the server
// scrapes.
//
// The state lives in the URL (url-state.js): every change the user makes is a new history
// entry, so Back returns to the previous view and a link reproduces one.

import { loadSchema, listNames, useDatabase, viewRange } from './api.js';
import { CardinalityView } from './cardinality.js';
import { TargetsView } from './targets.js';
import { Controls } from './controls.js';
import { Panel } from './panel.js';
import { DatabasePicker, Picker } from './pickers.js';
import { TagFilters } from './tag-filters.js';
import { formatDurationMs, isoUtc, parseDurationMs } from './time-format.js';
import { RANGE_PRESETS, readState, sameState, withChanges, writeState } from './url-state.js';

const byId = (id) => document.getElementById(id);
const DAY_MS = 86400e3;

/**
 * "Last N" views refresh by default up to a day, faster for shorter ranges; the URL's
 * `refresh` (on/off), set by the checkbox, overrides the default.
 */
function refreshPolicy(state) {
  const lengthMs = state.start ? null : parseDurationMs(state.range);
  if (lengthMs === null) return { allowed: false, on: false, everyMs: 0 };
  const everyMs = lengthMs <= 6 * 3600e3 ? 5000 : lengthMs <= DAY_MS ? 10000 : 60000;
  const on = state.refresh ? state.refresh === 'on' : lengthMs <= DAY_MS;
  return { allowed: true, on, everyMs };
}

class Dashboard {
  constructor() {
    this.state = readState(window.location.search);
    useDatabase(this.state.db);
    this.counters = new Set();
    this.rawRetentionMs = () => null;
    this.loadSchemaOf(this.state.db);
    this.panels = []; // in the order of state.fields
    this.panelsBox = byId('panels');
    this.loading = null; // the load in flight: {sequence}
    this.sequence = 0;
    this.loadedAt = 0;

    this.controls = new Controls({
      onChange: (changes) => this.change(changes),
      onRefreshToggle: (on) => this.setRefresh(on ? 'on' : 'off'),
    });
    // Names belong to a database: another one starts from an empty selection.
    const inDatabase = (db) => ({ db, measurement: '', fields: [], tags: [], display: '' });
    this.databasePicker = new DatabasePicker({ onChange: (db) => this.change(inDatabase(db)) });
    this.measurementPicker = new Picker(byId('measurement'), {
      load: (prefix, signal) => listNames('measurements', {}, prefix, signal),
      // Fields and tags belong to the measurement they were picked for.
      onPick: (name) => this.change({ measurement: name, fields: [], tags: [], display: '' }),
      restoreOnClose: true,
    });
    this.listFields = (prefix, signal) => listNames('fields', { measurement: this.state.measurement }, prefix, signal);
    const { listFields } = this;
    // The field of a page with one chart, as before there were several.
    this.fieldPicker = new Picker(byId('field'), {
      load: listFields,
      onPick: (name) => this.change({ fields: name ? [name] : [] }),
      restoreOnClose: true,
    });
    this.addChartPicker = new Picker(byId('add-field'), {
      load: listFields,
      onPick: (name) => this.addChart(name),
      allowFreeText: true,
    });
    this.tagFilters = new TagFilters({
      measurement: () => this.state.measurement,
      onChange: (tags) => this.change({ tags }),
    });
    byId('selection').addEventListener('submit', (event) => event.preventDefault());
    this.cardinality = new CardinalityView({
      onClose: () => this.setCardinality(false),
      pickMeasurement: (name) => this.change({ measurement: name, fields: [], tags: [], display: '' }),
      pickField: (measurement, field) => this.change(measurement === this.state.measurement
        ? { fields: [field] }
        : { measurement, fields: [field], tags: [], display: '' }),
      pickTagKey: (key) => this.tagFilters.startWith(key),
      pickTag: (condition) => {
        if (!this.state.tags.includes(condition)) this.change({ tags: [...this.state.tags, condition] });
      },
      pickDatabase: (name) => {
        const db = name === this.databasePicker.defaultName ? '' : name;
        if (db !== this.state.db) this.change(inDatabase(db));
      },
    });
    byId('cardinality-toggle').addEventListener('click',
      () => this.setCardinality(this.state.cardinality !== 'open'));
    this.targets = new TargetsView({ onClose: () => this.setTargets(false) });
    byId('targets-toggle').addEventListener('click',
      () => this.setTargets(this.state.targets !== 'open'));

    window.addEventListener('popstate', () => {
      this.state = readState(window.location.search);
      this.sync();
      this.load();
    });
    setInterval(() => this.refreshIfDue(), 1000);
    this.sync();
    this.load();
  }

  /** A change the user made: a new history entry and a new query. */
  change(changes) {
    const next = withChanges(this.state, changes);
    if (sameState(next, this.state)) return;
    this.state = next;
    window.history.pushState(null, '', `${window.location.pathname}${writeState(next)}`);
    this.sync();
    this.load();
  }

  /**
   * Auto-refresh switched on or off: kept in the URL, so a reload or a link keeps it, but
   * in place of the current history entry (Back goes to the previous view, not to the
   * checkbox's last state) and without a query of its own (the next refresh is one).
   */
  setRefresh(choice) {
    this.state = withChanges(this.state, { refresh: choice });
    window.history.replaceState(null, '', `${window.location.pathname}${writeState(this.state)}`);
    this.sync();
  }

  /**
   * The Series view opened or closed: a history entry of its own (Back closes it again),
   * but no query of the charts, which show the same as before.
   */
  setCardinality(open) {
    this.state = withChanges(this.state, { cardinality: open ? 'open' : '' });
    window.history.pushState(null, '', `${window.location.pathname}${writeState(this.state)}`);
    this.sync();
  }

  /** The Targets view opened or closed: as the Series view, a history entry and no query. */
  setTargets(open) {
    this.state = withChanges(this.state, { targets: open ? 'open' : '' });
    window.history.pushState(null, '', `${window.location.pathname}${writeState(this.state)}`);
    this.sync();
  }

  /** A chart of `field` after the others (offered once the first chart has a field). */
  addChart(field) {
    this.addChartPicker.setValue('');
    if (!field) return;
    this.change({ fields: [...this.state.fields, field] });
  }

  /** The chart of `field` shows `next` instead, in the same place (once, if it was shown). */
  replaceChart(field, next) {
    this.change({ fields: this.state.fields.map((f) => (f === field ? next : f)) });
  }

  removeChart(field) {
    this.change({ fields: this.state.fields.filter((f) => f !== field) });
  }

  zoomTo(startMs, endMs) {
    const start = Math.floor(startMs / 1000) * 1000;
    const end = Math.max(start + 1000, Math.ceil(endMs / 1000) * 1000);
    this.change({ start: isoUtc(start), end: isoUtc(end), range: '' });
  }

  /** Twice the range around its middle; a "last N" view goes to the next preset. */
  zoomOut() {
    if (!this.state.start) {
      const next = RANGE_PRESETS[RANGE_PRESETS.indexOf(this.state.range) + 1];
      if (next) this.change({ range: next });
      return;
    }
    const now = Date.now();
    const { startMs, endMs } = viewRange(this.state, now);
    const span = endMs - startMs;
    const end = Math.min(now, endMs + span / 2);
    this.zoomTo(end - 2 * span, end);
  }

  /** The time under the pointer of `source`, shown as a crosshair on every other chart. */
  shareHover(source, ms) {
    for (const panel of this.panels) {
      if (panel !== source) panel.chart.showLinkedCrosshair(ms);
    }
  }

  /**
   * The schema of database `db` (its counters, and raw retention as its retention policy
   * leaves it), loaded once per database; the view is shown again when it comes.
   */
  loadSchemaOf(db) {
    this.schemaDb = db;
    this.schemaLoaded = loadSchema()
      .then(({ counters, rawRetentionMs }) => {
        if (this.schemaDb !== db) return; // another database was chosen meanwhile
        this.counters = counters;
        this.rawRetentionMs = rawRetentionMs;
        this.sync();
      })
      .catch((error) => this.setStatus(`schema not available: ${error.message}`));
  }

  /** Shows the state in every control, and one panel per field in the URL's order. */
  sync() {
    const { state } = this;
    const isCounter = this.counters.has(state.measurement);
    const range = viewRange(state, Date.now());
    // Before any request of this state: every data request names its database.
    useDatabase(state.db);
    if (state.db !== this.schemaDb) this.loadSchemaOf(state.db);
    this.databasePicker.sync(state.db);
    this.measurementPicker.setValue(state.measurement);
    this.fieldPicker.setValue(state.fields[0] || '');
    // With several charts each names its field; the top bar's picker is for one.
    byId('field-picker').hidden = state.fields.length > 1;
    // "Every field" is one chart of its own: another chart is added beside a field's.
    const addField = byId('add-field');
    addField.disabled = state.fields.length === 0;
    addField.placeholder = state.fields.length ? 'field…' : 'pick a field above first';
    this.tagFilters.sync(state.tags, Boolean(state.measurement));
    this.controls.sync(state, {
      isCounter,
      startMs: range.startMs,
      endMs: range.endMs,
      refresh: refreshPolicy(state),
    });
    this.syncPanels();
    this.cardinality.sync(state);
    byId('cardinality-toggle').setAttribute('aria-pressed', String(state.cardinality === 'open'));
    this.targets.sync(state);
    byId('targets-toggle').setAttribute('aria-pressed', String(state.targets === 'open'));
    const fields = state.fields.length > 1 ? `{${state.fields.join(',')}}` : state.fields[0];
    const name = [state.measurement, fields].filter(Boolean).join('.');
    const title = [state.db, name].filter(Boolean).join(' / ');
    document.title = title ? `${title} · tickertape` : 'tickertape';
  }

  /** Keeps the panel of a field that stays (its answer, its hidden series), adds and removes. */
  syncPanels() {
    const fields = this.state.fields.length ? this.state.fields : [''];
    const kept = new Map(this.panels.map((panel) => [panel.field, panel]));
    this.panels = fields.map((field) => {
      const panel = kept.get(field) ?? new Panel(field, {
        onZoom: (startMs, endMs) => this.zoomTo(startMs, endMs),
        onZoomOut: () => this.zoomOut(),
        onHover: (ms) => this.shareHover(panel, ms),
        onRemove: () => this.removeChart(field),
        loadFields: this.listFields,
        onChangeField: (name) => this.replaceChart(field, name),
      });
      kept.delete(field);
      return panel;
    });
    for (const gone of kept.values()) {
      gone.cancel();
      gone.element.remove();
    }
    const zone = this.state.tz === 'local' ? 'local' : 'utc';
    this.panels.forEach((panel, index) => {
      panel.place(index, this.panels.length);
      panel.setTitle(this.state.measurement);
      panel.chart.setTimeZone(zone);
    });
    // In order; append moves a panel that is already there.
    this.panelsBox.append(...this.panels.map((panel) => panel.element));
    this.panelsBox.dataset.count = String(this.panels.length);
  }

  refreshIfDue() {
    const policy = refreshPolicy(this.state);
    if (!policy.allowed || !policy.on || document.hidden || this.loading) return;
    if (this.panels.some((panel) => panel.isBusy())) return;
    if (Date.now() - this.loadedAt >= policy.everyMs) this.load();
  }

  /** Queries every chart of the view at once; each shows its answer or why there is none. */
  async load() {
    await this.schemaLoaded;
    const { state } = this;
    const now = Date.now();
    const { startMs, endMs } = viewRange(state, now);
    this.loadedAt = now;
    const loading = { sequence: (this.sequence += 1), retention: this.retentionNote(startMs, now) };
    this.loading = loading;
    if (!state.measurement) {
      for (const panel of this.panels) panel.showNothing(startMs, endMs, 'idle', 'Pick a measurement to chart.');
      this.finishLoad(loading, []);
      return;
    }
    if (!Number.isFinite(startMs) || !Number.isFinite(endMs)) {
      const message = `cannot read the range “${state.start}” … “${state.end}”: give RFC 3339 (2026-01-01T00:00:00Z), nanoseconds, or a time relative to now (now-30d, -1h)`;
      this.finishLoad(loading, this.panels.map((panel) => panel.showError(now - 3600e3, now, message)));
      return;
    }
    this.setStatus('loading…');
    const view = { nowMs: now, startMs, endMs, isCounter: this.counters.has(state.measurement) };
    // Settled, not all: a chart that threw is one error, and the status line still ends.
    const settled = await Promise.allSettled(this.panels.map((panel) => panel.load(state, view)));
    const results = settled.map((s) => (s.status === 'fulfilled' ? s.value : { error: String(s.reason) }));
    this.finishLoad(loading, results);
  }

  /** The status line of a load that is still the newest: what every chart showed. */
  finishLoad(loading, results) {
    if (this.loading !== loading) return;
    this.loading = null;
    const shown = results.filter((result) => result && !result.error);
    const failed = results.filter((result) => result && result.error).length;
    if (shown.length === 0 && failed === 0) {
      this.setStatus('');
      return;
    }
    const series = shown.reduce((n, result) => n + result.series, 0);
    const points = shown.reduce((n, result) => n + result.points, 0);
    const charts = results.length > 1 ? `${results.length} charts, ` : '';
    const errors = failed ? ` · ${failed} failed` : '';
    const stamp = new Date().toLocaleTimeString();
    const note = loading.retention ? ` · ${loading.retention}` : '';
    this.setStatus(`${charts}${series} series, ${points} points${errors} · updated ${stamp}${note}`);
  }

  /** What the view's range crosses of the measurement's raw retention, if anything. */
  retentionNote(startMs, nowMs) {
    const keep = this.state.measurement ? this.rawRetentionMs(this.state.measurement) : null;
    if (keep === null || startMs >= nowMs - keep) return '';
    return `raw points are kept ${formatDurationMs(keep)}: before ${isoUtc(nowMs - keep)} the rollups answer`;
  }

  setStatus(text) {
    byId('status').textContent = text;
  }
}

window.dashboard = new Dashboard();
