// The dashboard: one chart of the series the URL's state selects, MMS's controls above it,
// the legend and the points below. The state lives in the URL (url-state.js): every change
// the user makes is a new history entry, so Back returns to the previous view and a link
// reproduces one.

import { ApiError, counterMeasurements, listNames, queryParams, runQuery, viewRange } from './api.js';
import { Chart, seriesColor } from './chart.js';
import { Controls } from './controls.js';
import { Picker } from './pickers.js';
import { fullName, shortLabels } from './series-names.js';
import { download, renderTable, toCsv } from './table.js';
import { TagFilters } from './tag-filters.js';
import { isoUtc, parseDurationMs } from './time-format.js';
import { RANGE_PRESETS, readState, sameState, withChanges, writeState } from './url-state.js';

const byId = (id) => document.getElementById(id);
const DAY_MS = 86400e3;

/** "Last N" views refresh by default up to a day; faster for shorter ranges. */
function refreshPolicy(state, userChoice) {
  const lengthMs = state.start ? null : parseDurationMs(state.range);
  if (lengthMs === null) return { allowed: false, on: false, everyMs: 0 };
  const everyMs = lengthMs <= 6 * 3600e3 ? 5000 : lengthMs <= DAY_MS ? 10000 : 60000;
  return { allowed: true, on: userChoice ?? lengthMs <= DAY_MS, everyMs };
}

function compareNames([labelA, nameA], [labelB, nameB]) {
  return labelA.localeCompare(labelB, 'en', { numeric: true }) || (nameA < nameB ? -1 : nameA > nameB ? 1 : 0);
}

class Dashboard {
  constructor() {
    this.state = readState(window.location.search);
    this.counters = new Set();
    this.schemaLoaded = counterMeasurements()
      .then((counters) => {
        this.counters = counters;
        this.sync();
      })
      .catch((error) => this.setStatus(`schema not available: ${error.message}`));
    this.refreshChoice = null; // null: the default of the range
    this.hidden = new Set(); // full names of series the legend turned off
    this.answer = null;
    this.request = null; // {controller, sequence}
    this.sequence = 0;
    this.loadedAt = 0;

    this.chart = new Chart(byId('chart'), {
      onZoom: (startMs, endMs) => this.zoomTo(startMs, endMs),
      onZoomOut: () => this.zoomOut(),
    });
    this.controls = new Controls({
      onChange: (changes) => this.change(changes),
      onRefreshToggle: (on) => {
        this.refreshChoice = on;
        this.sync();
      },
    });
    this.measurementPicker = new Picker(byId('measurement'), {
      load: (prefix, signal) => listNames('measurements', {}, prefix, signal),
      // Field and tags belong to the measurement they were picked for.
      onPick: (name) => this.change({ measurement: name, field: '', tags: [], display: '' }),
      restoreOnClose: true,
    });
    this.fieldPicker = new Picker(byId('field'), {
      load: (prefix, signal) => listNames('fields', { measurement: this.state.measurement }, prefix, signal),
      onPick: (name) => this.change({ field: name }),
      restoreOnClose: true,
    });
    this.tagFilters = new TagFilters({
      measurement: () => this.state.measurement,
      onChange: (tags) => this.change({ tags }),
    });
    byId('selection').addEventListener('submit', (event) => event.preventDefault());
    byId('toggle-table').addEventListener('click', () => this.toggleTable());
    byId('download-csv').addEventListener('click', () => this.downloadCsv());

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

  /** Shows the state in every control. */
  sync() {
    const { state } = this;
    const isCounter = this.counters.has(state.measurement);
    const range = viewRange(state, Date.now());
    this.measurementPicker.setValue(state.measurement);
    this.fieldPicker.setValue(state.field);
    this.tagFilters.sync(state.tags, Boolean(state.measurement));
    this.controls.sync(state, {
      isCounter,
      startMs: range.startMs,
      endMs: range.endMs,
      refresh: refreshPolicy(state, this.refreshChoice),
    });
    const name = [state.measurement, state.field].filter(Boolean).join('.');
    document.title = name ? `${name} · tickertape` : 'tickertape';
  }

  refreshIfDue() {
    const policy = refreshPolicy(this.state, this.refreshChoice);
    if (!policy.allowed || !policy.on || document.hidden || this.request || this.chart.drag) return;
    if (Date.now() - this.loadedAt >= policy.everyMs) this.load();
  }

  /** Queries the view and shows the answer, or why there is none. */
  async load() {
    await this.schemaLoaded;
    if (this.request) this.request.controller.abort();
    const { state } = this;
    const now = Date.now();
    const { startMs, endMs } = viewRange(state, now);
    this.loadedAt = now;
    if (!state.measurement) {
      this.showNothing(startMs, endMs, 'idle', 'Pick a measurement to chart.');
      return;
    }
    if (!Number.isFinite(startMs) || !Number.isFinite(endMs)) {
      this.showError(now - 3600e3, now,
        `cannot read the range “${state.start}” … “${state.end}”: give RFC 3339 (2026-01-01T00:00:00Z) or nanoseconds`);
      return;
    }
    const controller = new AbortController();
    const request = { controller, sequence: (this.sequence += 1) };
    this.request = request;
    if (!this.answer) this.chart.setMessage('loading', 'Loading…');
    this.setStatus('loading…');
    const params = queryParams(state, {
      nowMs: now,
      plotWidth: this.chart.plotWidth(),
      isCounter: this.counters.has(state.measurement),
    });
    try {
      const answer = await runQuery(params, controller.signal);
      if (this.request !== request) return;
      this.show(answer, startMs, endMs);
    } catch (error) {
      if (error.name === 'AbortError' || this.request !== request) return;
      const status = error instanceof ApiError && error.status ? ` (HTTP ${error.status})` : '';
      this.showError(startMs, endMs, `The query failed${status}: ${error.message}`);
    } finally {
      if (this.request === request) this.request = null;
    }
  }

  show(unordered, startMs, endMs) {
    // In label order (then full name), so that a series keeps its colour and its column
    // from one answer to the next, and the legend reads host_0, host_1, …
    const short = shortLabels(unordered.series);
    const names = unordered.series.map((s, i) => [short[i], fullName(s)]);
    const order = names.map((_, i) => i).sort((a, b) => compareNames(names[a], names[b]));
    const answer = { ...unordered, series: order.map((i) => unordered.series[i]) };
    this.answer = answer;
    const labels = order.map((i) => names[i][0]);
    this.columns = answer.series.map((s, i) => ({ name: fullName(s), label: labels[i] }));
    const series = answer.series.map((s, i) => ({
      label: labels[i],
      color: seriesColor(i),
      values: s.values,
      hidden: this.hidden.has(this.columns[i].name),
    }));
    this.chart.setData({ times: answer.times, series, startMs, endMs });
    const points = answer.series.reduce((n, s) => n + s.values.filter((v) => v !== null).length, 0);
    // The server leaves out series without points in the range: an unknown tag value and
    // a quiet range look alike from here.
    if (points === 0) {
      this.chart.setMessage('empty', 'No data in this range for this measurement, field and tags.');
    } else {
      this.chart.setMessage('', '');
      this.chart.setState('ok');
    }
    byId('error').hidden = true;
    this.renderLegend(series);
    this.renderPoints();
    const stamp = new Date().toLocaleTimeString();
    this.setStatus(`${answer.series.length} series, ${points} points · updated ${stamp}`);
  }

  showNothing(startMs, endMs, kind, message) {
    this.answer = null;
    this.chart.setData({ times: [], series: [], startMs, endMs });
    this.chart.setMessage(kind, message);
    this.renderLegend([]);
    this.renderPoints();
    this.setStatus('');
  }

  /** An error over the chart (whose frame stays) and in the banner above it. */
  showError(startMs, endMs, message) {
    this.showNothing(startMs, endMs, 'error', message);
    const banner = byId('error');
    banner.textContent = message;
    banner.hidden = false;
  }

  renderLegend(series) {
    const legend = byId('legend');
    legend.dataset.count = String(series.length);
    legend.replaceChildren(...series.map((s, i) => {
      const item = document.createElement('li');
      const button = document.createElement('button');
      button.type = 'button';
      button.className = s.hidden ? 'legend-item off' : 'legend-item';
      button.title = `${this.columns[i].name} (click to hide or show)`;
      button.setAttribute('aria-pressed', String(!s.hidden));
      const swatch = document.createElement('span');
      swatch.className = 'swatch';
      swatch.style.background = s.color;
      const label = document.createElement('span');
      label.textContent = s.label;
      button.append(swatch, label);
      button.addEventListener('click', () => this.toggleSeries(i));
      item.append(button);
      return item;
    }));
  }

  toggleSeries(index) {
    const name = this.columns[index].name;
    if (this.hidden.has(name)) this.hidden.delete(name);
    else this.hidden.add(name);
    if (this.answer) this.show(this.answer, this.chart.data.startMs, this.chart.data.endMs);
  }

  toggleTable() {
    const wrap = byId('table-wrap');
    wrap.hidden = !wrap.hidden;
    byId('toggle-table').textContent = wrap.hidden ? 'Show table' : 'Hide table';
    byId('toggle-table').setAttribute('aria-expanded', String(!wrap.hidden));
    this.renderPoints();
  }

  renderPoints() {
    const table = byId('table');
    const note = byId('table-note');
    byId('download-csv').disabled = !this.answer || this.answer.times.length === 0;
    if (!this.answer) {
      table.replaceChildren();
      note.textContent = '';
      return;
    }
    if (byId('table-wrap').hidden) {
      note.textContent = `${this.answer.times.length} rows`;
      return;
    }
    renderTable(table, note, this.answer, this.columns);
  }

  downloadCsv() {
    if (!this.answer) return;
    const name = [this.state.measurement, this.state.field].filter(Boolean).join('.');
    const from = isoUtc(this.chart.data.startMs).replace(/[:]/g, '');
    download(`${name}-${from}.csv`, toCsv(this.answer, this.columns));
  }

  setStatus(text) {
    byId('status').textContent = text;
  }
}

window.dashboard = new Dashboard();
