// The Series view: what makes the store's series count. Totals, then the
// largest measurements, fields, tag keys and tag pairs, the top TOP of each
// (`GET /api/v1/status/cardinality`), as small tables with a bar for each row's size
// beside the list's largest. All of the chosen database (the view's `db`); where the
// server has several databases, a list of them with their series comes first, each a
// button that chooses it, and the head says how many series all of them hold.
//
// Names a chart can use are buttons that put them into the chart's pickers: a measurement
// selects it, a field charts it. Tag keys and pairs are counted over every measurement, so
// they only become buttons once a measurement is chosen: a key starts a tag filter with
// that key (the value picker opens), a pair adds the filter K:V.
//
// The view loads when it opens and when "Count again" is pressed, not with every chart
// refresh: on a large store the count is a pass over every series key.

import { ApiError, cardinality } from './api.js';

/** Rows per list: the API's default `limit`, Prometheus' /status/tsdb's as well. */
export const TOP = 10;

const TOTALS = [
  ['series', 'Series'],
  ['measurements', 'Measurements'],
  ['fields', 'Fields'],
  ['tag_pairs', 'Tag pairs'],
];

/**
 * The lists of the answer, in the order shown. `name(item)` is the row's text, `count`
 * the answer's number field, `pick` which of the view's callbacks a click calls (absent:
 * never a button), `needsMeasurement` whether that only makes sense with one chosen.
 */
const LISTS = [
  {
    key: 'series_by_database', title: 'Databases', column: 'database', count: 'series',
    name: (item) => item.name,
    pick: (on, item) => on.pickDatabase(item.name),
    hint: (item) => `chart the series of database ${item.name}`,
    allDatabases: true,
  },
  {
    key: 'series_by_measurement', title: 'Measurements', column: 'measurement', count: 'series',
    name: (item) => item.name,
    pick: (on, item) => on.pickMeasurement(item.name),
    hint: (item) => `chart ${item.name}`,
  },
  {
    key: 'series_by_field', title: 'Fields', column: 'measurement.field', count: 'series',
    name: (item) => `${item.measurement}.${item.field}`,
    pick: (on, item) => on.pickField(item.measurement, item.field),
    hint: (item) => `chart field ${item.field} of ${item.measurement}`,
  },
  {
    key: 'values_by_tag_key', title: 'Tag keys', column: 'key', count: 'values',
    name: (item) => item.name,
    pick: (on, item) => on.pickTagKey(item.name),
    hint: (item) => `filter the charts by a value of ${item.name}`,
    needsMeasurement: true,
  },
  {
    key: 'series_by_tag', title: 'Tag pairs', column: 'key=value', count: 'series',
    name: (item) => `${item.key}=${item.value}`,
    pick: (on, item) => on.pickTag(`${item.key}:${item.value}`),
    hint: (item) => `filter the charts by ${item.key}:${item.value}`,
    needsMeasurement: true,
  },
];

const byId = (id) => document.getElementById(id);

export class CardinalityView {
  /**
   * The view in `#cardinality`. Callbacks: `onClose()` (its × button), and the picks
   * `pickMeasurement(name)`, `pickField(measurement, field)`, `pickTagKey(key)`,
   * `pickTag('K:V')`, `pickDatabase(name)`.
   */
  constructor({ onClose, pickMeasurement, pickField, pickTagKey, pickTag, pickDatabase }) {
    this.element = byId('cardinality');
    this.totals = byId('cardinality-totals');
    this.lists = byId('cardinality-lists');
    this.error = byId('cardinality-error');
    this.note = byId('cardinality-note');
    this.database = byId('cardinality-database');
    this.picks = { pickMeasurement, pickField, pickTagKey, pickTag, pickDatabase };
    byId('cardinality-close').addEventListener('click', onClose);
    byId('cardinality-reload').addEventListener('click', () => this.load());
    this.isOpen = false;
    this.hasMeasurement = false;
    this.db = '';
    this.answer = null;
    this.request = null; // the load in flight: {controller}
  }

  /** Shows or hides the view as `state` says; loads it when it opens. */
  sync(state) {
    const open = state.cardinality === 'open';
    const measurementChanged = this.hasMeasurement !== Boolean(state.measurement);
    this.hasMeasurement = Boolean(state.measurement);
    const databaseChanged = this.db !== state.db;
    this.db = state.db;
    this.element.hidden = !open;
    if (open && (!this.isOpen || databaseChanged)) {
      this.isOpen = true;
      this.load();
    } else if (!open && this.isOpen) {
      this.isOpen = false;
      this.cancel();
    } else if (open && measurementChanged && this.answer) {
      this.render(); // tag keys and pairs become buttons, or stop being ones
    }
  }

  cancel() {
    if (this.request) this.request.controller.abort();
    this.request = null;
  }

  /** Asks for the counts and shows them, or the error; the older answer stays meanwhile. */
  async load() {
    this.cancel();
    const request = { controller: new AbortController() };
    this.request = request;
    this.element.dataset.state = 'loading';
    this.note.textContent = 'counting…';
    try {
      const answer = await cardinality(TOP, request.controller.signal);
      if (this.request !== request) return;
      this.answer = answer;
      this.error.hidden = true;
      this.render();
      this.note.textContent = `top ${TOP} of each · counted at ${new Date().toLocaleTimeString()}`;
      this.element.dataset.state = 'ok';
    } catch (error) {
      if (error.name === 'AbortError' || this.request !== request) return;
      const status = error instanceof ApiError && error.status ? ` (HTTP ${error.status})` : '';
      this.error.textContent = `Cannot count the series${status}: ${error.message}`;
      this.error.hidden = false;
      this.note.textContent = '';
      this.element.dataset.state = 'error';
    } finally {
      if (this.request === request) this.request = null;
    }
  }

  render() {
    const { answer } = this;
    const databases = answer.series_by_database || [];
    const several = databases.length > 1;
    this.database.textContent = several && answer.database
      ? `database ${answer.database} · ${formatCount(answer.series_in_all_databases)} series in all ${databases.length} databases`
      : '';
    this.database.dataset.database = answer.database || '';
    this.totals.replaceChildren(...TOTALS.map(([key, label]) => {
      const group = document.createElement('div');
      group.className = 'total';
      const term = document.createElement('dt');
      term.textContent = label;
      const value = document.createElement('dd');
      value.dataset.total = key;
      value.textContent = formatCount(answer[key]);
      group.append(term, value);
      return group;
    }));
    const lists = LISTS.filter((list) => !list.allDatabases || several);
    this.lists.replaceChildren(...lists.map((list) => this.renderList(list, answer[list.key] || [])));
  }

  /** One list as a table: name (a button where it can be picked), count, bar. */
  renderList(list, items) {
    const figure = document.createElement('figure');
    figure.className = 'top-list';
    const caption = document.createElement('figcaption');
    caption.textContent = list.title;
    const table = document.createElement('table');
    table.dataset.list = list.key;
    const head = document.createElement('thead');
    head.append(row('th', [list.column, list.count, '']));
    const body = document.createElement('tbody');
    const largest = items.length ? Math.max(...items.map((item) => item[list.count])) : 0;
    const pickable = list.pick && (!list.needsMeasurement || this.hasMeasurement);
    for (const item of items) {
      const name = list.name(item);
      const count = item[list.count];
      const tr = row('td', ['', formatCount(count), '']);
      tr.dataset.name = name;
      tr.dataset.count = String(count);
      if (list.allDatabases && name === this.answer.database) tr.setAttribute('aria-current', 'true');
      const [nameCell, , barCell] = tr.children;
      if (pickable) {
        const button = document.createElement('button');
        button.type = 'button';
        button.className = 'pick';
        button.textContent = name;
        button.title = `${name}: ${list.hint(item)}`;
        button.addEventListener('click', () => list.pick(this.picks, item));
        nameCell.append(button);
      } else {
        nameCell.textContent = name;
        nameCell.title = list.needsMeasurement ? `${name}: pick a measurement to filter by this` : name;
      }
      barCell.className = 'bar-cell';
      const total = list.allDatabases ? this.answer.series_in_all_databases : this.answer.series;
      barCell.append(bar(count, largest, list.count === 'series' ? total : null));
      body.append(tr);
    }
    if (items.length === 0) {
      const empty = row('td', ['nothing stored yet', '', '']);
      empty.className = 'note';
      body.append(empty);
    }
    table.append(head, body);
    figure.append(caption, table);
    return figure;
  }
}

function row(tag, texts) {
  const tr = document.createElement('tr');
  for (const text of texts) {
    const node = document.createElement(tag);
    node.textContent = text;
    tr.append(node);
  }
  return tr;
}

/**
 * A bar as long as `count` is beside `largest`; its title gives the share of `total`
 * series where the count is of series. Sized through the CSSOM (`style.width`), which the
 * page's Content-Security-Policy allows, unlike a style attribute in markup.
 */
function bar(count, largest, total) {
  const track = document.createElement('span');
  track.className = 'bar';
  const fill = document.createElement('span');
  fill.className = 'bar-fill';
  fill.style.width = `${largest > 0 ? (100 * count) / largest : 0}%`;
  track.append(fill);
  if (total) track.title = `${((100 * count) / total).toFixed(1)}% of all ${formatCount(total)} series`;
  return track;
}

/** 1234567 → "1,234,567", the same in every locale, so that tests and screenshots agree. */
function formatCount(n) {
  return Number.isFinite(n) ? n.toLocaleString('en-US') : String(n ?? '');
}
