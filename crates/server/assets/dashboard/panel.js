// One chart of the page and what belongs to it alone: its title (the field), its error
// banner, the chart, its legend (series the user hid), and its points (table and CSV of
// exactly what it draws). The view's other parameters — measurement, tags, range,
// resolution, agg, display — are the page's and shared by every panel (app.js).
//
// A panel runs its own query, so one chart's error or empty range never blanks another.
// The first panel on the page carries the element ids of the single-chart page (#chart,
// #legend, #error, #table, …), the others the same ids with "-2", "-3", …: links, tests and
// tools written for one chart keep finding it.

import { ApiError, queryParams, runQuery } from './api.js';
import { Chart, seriesColor } from './chart.js';
import { Picker } from './pickers.js';
import { fullName, shortLabels } from './series-names.js';
import { download, renderTable, toCsv } from './table.js';
import { isoUtc } from './time-format.js';

/** The parts of a panel that have an id, by their class in the template. */
const PARTS = ['chart', 'legend', 'error', 'table', 'table-wrap', 'table-note', 'toggle-table', 'download-csv'];

function compareNames([labelA, nameA], [labelB, nameB]) {
  return labelA.localeCompare(labelB, 'en', { numeric: true }) || (nameA < nameB ? -1 : nameA > nameB ? 1 : 0);
}

export class Panel {
  /**
   * A panel for `field` ('' = every field of the measurement), built from the page's
   * `<template id="panel-template">`. `onZoom`, `onZoomOut`, `onHover` go to the chart;
   * `onRemove()` is the remove button's.
   */
  constructor(field, { onZoom, onZoomOut, onHover, onRemove, loadFields, onChangeField }) {
    this.field = field;
    this.element = document.getElementById('panel-template').content.firstElementChild.cloneNode(true);
    this.element.dataset.field = field;
    this.parts = Object.fromEntries(PARTS.map((name) => [name, this.element.querySelector(`.${name}`)]));
    this.title = this.element.querySelector('.panel-title');
    this.summary = this.element.querySelector('.panel-summary');
    this.removeButton = this.element.querySelector('.panel-remove');
    this.removeButton.setAttribute('aria-label', `remove the chart of ${field || 'every field'}`);
    this.removeButton.addEventListener('click', onRemove);
    // The field, changed in place: the pencil opens a field picker where the title is.
    this.editButton = this.element.querySelector('.panel-edit');
    this.fieldBox = this.element.querySelector('.panel-field-picker');
    const fieldInput = this.element.querySelector('.panel-field');
    this.fieldPicker = new Picker(fieldInput, {
      load: loadFields,
      onPick: (name) => {
        this.closeFieldPicker();
        if (name && name !== this.field) onChangeField(name);
      },
      restoreOnClose: true,
    });
    this.editButton.setAttribute('aria-label', `change the field of the chart of ${field || 'every field'}`);
    this.editButton.addEventListener('click', () => this.openFieldPicker());
    fieldInput.addEventListener('blur', () => this.closeFieldPicker());
    fieldInput.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') this.closeFieldPicker();
    });
    this.parts['toggle-table'].addEventListener('click', () => this.toggleTable());
    this.parts['download-csv'].addEventListener('click', () => this.downloadCsv());

    this.chart = new Chart(this.parts.chart, { onZoom, onZoomOut, onHover });
    this.hidden = new Set(); // full names of series the legend turned off
    this.answer = null;
    this.columns = [];
    this.request = null; // the query in flight: {controller}
    this.measurement = '';
  }

  /**
   * Ids by position (see the top of this file); the remove and edit buttons only among
   * several (a page of one chart has the Field picker above).
   */
  place(index, count) {
    const suffix = index === 0 ? '' : `-${index + 1}`;
    for (const [name, node] of Object.entries(this.parts)) node.id = `${name}${suffix}`;
    this.removeButton.hidden = count < 2;
    this.editButton.hidden = count < 2 || this.fieldBox.hidden === false;
  }

  openFieldPicker() {
    this.title.hidden = this.editButton.hidden = true;
    this.fieldBox.hidden = false;
    this.fieldPicker.setValue(this.field);
    this.fieldPicker.input.focus();
    this.fieldPicker.input.select();
  }

  closeFieldPicker() {
    if (this.fieldBox.hidden) return;
    this.fieldBox.hidden = true;
    this.title.hidden = this.editButton.hidden = false;
  }

  setTitle(measurement) {
    this.measurement = measurement;
    this.title.textContent = measurement
      ? `${measurement}.${this.field || '*'}`
      : 'no measurement';
    this.title.title = this.field ? `field ${this.field}` : 'every field of the measurement';
  }

  isBusy() {
    return this.request !== null || this.chart.drag !== null;
  }

  /**
   * Queries this panel's field of the view `state` and shows the answer or why there is
   * none. Resolves to {series, points} when it showed an answer, {error} when it showed
   * an error, null when a newer load replaced it.
   */
  async load(state, { nowMs, startMs, endMs, isCounter }) {
    if (this.request) this.request.controller.abort();
    const request = { controller: new AbortController() };
    this.request = request;
    if (!this.answer) this.chart.setMessage('loading', 'Loading…');
    const params = queryParams(state, this.field, { nowMs, plotWidth: this.chart.plotWidth(), isCounter });
    try {
      const answer = await runQuery(params, request.controller.signal);
      if (this.request !== request) return null;
      return this.show(answer, startMs, endMs);
    } catch (error) {
      if (error.name === 'AbortError' || this.request !== request) return null;
      const status = error instanceof ApiError && error.status ? ` (HTTP ${error.status})` : '';
      return this.showError(startMs, endMs, `The query failed${status}: ${error.message}`);
    } finally {
      if (this.request === request) this.request = null;
    }
  }

  /** Forgets the query in flight (the panel is removed, or the view has nothing to ask). */
  cancel() {
    if (this.request) this.request.controller.abort();
    this.request = null;
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
    // The server leaves out series without points in the range: an unknown tag value (or
    // field) and a quiet range look alike from here.
    if (points === 0) {
      this.chart.setMessage('empty', 'No data in this range for this measurement, field and tags.');
    } else {
      this.chart.setMessage('', '');
      this.chart.setState('ok');
    }
    this.parts.error.hidden = true;
    this.renderLegend(series);
    this.renderPoints();
    this.summary.textContent = `${answer.series.length} series, ${points} points`;
    return { series: answer.series.length, points };
  }

  /** The frame and axes of the range with a message over them; no answer, no legend. */
  showNothing(startMs, endMs, kind, message) {
    this.cancel();
    this.answer = null;
    this.columns = [];
    this.chart.setData({ times: [], series: [], startMs, endMs });
    this.chart.setMessage(kind, message);
    this.parts.error.hidden = true;
    this.renderLegend([]);
    this.renderPoints();
    this.summary.textContent = '';
  }

  /** An error over the chart (whose frame stays) and in the banner above it. */
  showError(startMs, endMs, message) {
    this.showNothing(startMs, endMs, 'error', message);
    this.parts.error.textContent = message;
    this.parts.error.hidden = false;
    this.summary.textContent = 'error';
    return { error: message };
  }

  renderLegend(series) {
    const legend = this.parts.legend;
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
    const wrap = this.parts['table-wrap'];
    const button = this.parts['toggle-table'];
    wrap.hidden = !wrap.hidden;
    button.textContent = wrap.hidden ? 'Show table' : 'Hide table';
    button.setAttribute('aria-expanded', String(!wrap.hidden));
    this.renderPoints();
  }

  renderPoints() {
    const { table } = this.parts;
    const note = this.parts['table-note'];
    this.parts['download-csv'].disabled = !this.answer || this.answer.times.length === 0;
    if (!this.answer) {
      table.replaceChildren();
      note.textContent = '';
      return;
    }
    if (this.parts['table-wrap'].hidden) {
      note.textContent = `${this.answer.times.length} rows`;
      return;
    }
    renderTable(table, note, this.answer, this.columns);
  }

  downloadCsv() {
    if (!this.answer) return;
    const name = [this.measurement, this.field].filter(Boolean).join('.');
    const from = isoUtc(this.chart.data.startMs).replace(/[:]/g, '');
    download(`${name}-${from}.csv`, toCsv(this.answer, this.columns));
  }
}
