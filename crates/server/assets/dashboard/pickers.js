// Search-as-you-type pickers over the listing endpoints: a text input with a drop-down of
// the names that start with what is typed (the server's `prefix`, at most LIST_LIMIT of
// them, and a note when there are more); and the database picker, a plain select (a
// server has few databases). Requests are debounced and the one in flight is
// cancelled by the next, so an answer never overwrites a newer one.

import { LIST_LIMIT, listDatabases } from './api.js';

const DEBOUNCE_MS = 150;

let pickerCount = 0;

/**
 * A combobox bound to `input`. `load(prefix, signal)` → `{items, truncated}`;
 * `onPick(value)` is called with a listed name or, on Enter, with the text typed.
 */
export class Picker {
  constructor(input, { load, onPick, allowFreeText = true, restoreOnClose = false }) {
    this.input = input;
    // With restoreOnClose, text typed but not picked is undone when the list closes, so
    // the input always shows what the view uses.
    this.restoreOnClose = restoreOnClose;
    this.committed = '';
    this.load = load;
    this.onPick = onPick;
    this.allowFreeText = allowFreeText;
    this.items = [];
    this.active = -1;
    this.timer = 0;
    this.controller = null;

    pickerCount += 1;
    this.list = document.createElement('ul');
    this.list.className = 'picker-list';
    this.list.id = `picker-list-${pickerCount}`;
    this.list.setAttribute('role', 'listbox');
    this.list.hidden = true;
    input.insertAdjacentElement('afterend', this.list);
    input.setAttribute('role', 'combobox');
    input.setAttribute('aria-autocomplete', 'list');
    input.setAttribute('aria-controls', this.list.id);
    input.setAttribute('aria-expanded', 'false');
    input.autocomplete = 'off';
    input.spellcheck = false;

    input.addEventListener('input', () => this.schedule());
    input.addEventListener('focus', () => this.schedule(0));
    input.addEventListener('keydown', (event) => this.onKey(event));
    input.addEventListener('blur', () => this.close());
    // mousedown, not click: it comes before the input's blur closes the list.
    this.list.addEventListener('mousedown', (event) => {
      const item = event.target.closest('li[data-value]');
      event.preventDefault();
      if (item) this.pick(item.dataset.value);
    });
  }

  /** Shows `value` in the input without asking the server. */
  setValue(value) {
    this.input.value = value;
    this.committed = value;
  }

  schedule(delay = DEBOUNCE_MS) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), delay);
  }

  async refresh() {
    if (this.controller) this.controller.abort();
    const controller = new AbortController();
    this.controller = controller;
    const prefix = this.input.value;
    this.renderNote('searching…');
    try {
      const { items, truncated } = await this.load(prefix, controller.signal);
      if (controller.signal.aborted || document.activeElement !== this.input) return;
      this.items = items;
      this.active = -1;
      this.render(prefix, truncated);
    } catch (error) {
      if (error.name === 'AbortError') return;
      if (document.activeElement === this.input) this.renderNote(`cannot list: ${error.message}`, true);
    }
  }

  render(prefix, truncated) {
    this.list.replaceChildren();
    for (const [index, value] of this.items.entries()) {
      const item = document.createElement('li');
      item.dataset.value = value;
      item.id = `${this.list.id}-${index}`;
      item.setAttribute('role', 'option');
      item.textContent = value;
      this.list.append(item);
    }
    if (this.items.length === 0) {
      this.addNote(prefix ? `nothing starts with “${prefix}”` : 'nothing stored yet');
    } else if (truncated) {
      this.addNote(`first ${LIST_LIMIT} shown; type more to narrow`);
    }
    this.open();
  }

  renderNote(text, isError = false) {
    if (document.activeElement !== this.input) return;
    this.list.replaceChildren();
    this.addNote(text, isError);
    this.open();
  }

  addNote(text, isError = false) {
    const note = document.createElement('li');
    note.className = isError ? 'picker-note picker-error' : 'picker-note';
    note.textContent = text;
    this.list.append(note);
  }

  open() {
    this.list.hidden = false;
    this.input.setAttribute('aria-expanded', 'true');
  }

  close() {
    clearTimeout(this.timer);
    if (this.controller) this.controller.abort();
    this.list.hidden = true;
    this.input.setAttribute('aria-expanded', 'false');
    if (this.restoreOnClose) this.input.value = this.committed;
  }

  onKey(event) {
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      if (this.items.length === 0) return;
      const step = event.key === 'ArrowDown' ? 1 : -1;
      this.active = (this.active + step + this.items.length) % this.items.length;
      this.highlight();
    } else if (event.key === 'Enter') {
      event.preventDefault();
      if (this.active >= 0) this.pick(this.items[this.active]);
      else if (this.allowFreeText) this.pick(this.input.value.trim());
    } else if (event.key === 'Escape') {
      this.close();
    }
  }

  highlight() {
    for (const [index, item] of [...this.list.querySelectorAll('li[data-value]')].entries()) {
      item.classList.toggle('active', index === this.active);
      if (index === this.active) {
        item.scrollIntoView({ block: 'nearest' });
        this.input.setAttribute('aria-activedescendant', item.id);
      }
    }
  }

  pick(value) {
    this.setValue(value);
    this.close();
    this.onPick(value);
  }
}

// The database picker (InfluxDB's `db`): a select of the server's databases
// (`GET /api/v1/databases`), shown only when there is more than the default one, so a
// store that never names a database looks as it always did. The default database is the
// option of value '' (no `db` in the URL or the requests); a `db` from a link that the
// server does not list is kept and shown as unknown, and the requests' 404 says why. It
// only reports what the user picked (`onChange(name)`); app.js owns the state.

const byId = (id) => document.getElementById(id);

export class DatabasePicker {
  constructor({ onChange }) {
    this.box = byId('database-picker');
    this.select = byId('database');
    this.names = [];
    this.defaultName = '';
    this.current = '';
    this.select.addEventListener('change', () => onChange(this.select.value));
    // Listed again when the user reaches for it: a database made since is offered.
    this.select.addEventListener('focus', () => this.load());
    this.load();
  }

  /** Reads the list; an older server without the route, or a failure, hides the picker. */
  async load() {
    try {
      const { names, defaultName } = await listDatabases();
      this.names = names;
      this.defaultName = defaultName;
      this.box.dataset.state = 'ok';
    } catch (error) {
      this.names = [];
      this.box.dataset.state = 'error';
      this.box.title = `databases not available: ${error.message}`;
    }
    this.render();
  }

  /** Shows `db`, the state's database ('' = the default one). */
  sync(db) {
    this.current = db;
    this.render();
  }

  render() {
    // A link may name the default database: it is the same option as none.
    const value = this.current === this.defaultName ? '' : this.current;
    const others = this.names.filter((name) => name !== this.defaultName);
    const unknown = value && !others.includes(value) ? [value] : [];
    this.box.hidden = others.length === 0 && unknown.length === 0;
    const defaultText = this.defaultName ? `${this.defaultName} (default)` : 'default';
    const options = [['', defaultText], ...[...others, ...unknown].sort()
      .map((name) => [name, unknown.includes(name) && this.box.dataset.state === 'ok' ? `${name} (unknown)` : name])];
    // Rebuilt only when the list changed: rebuilding an open select would close it.
    const signature = JSON.stringify(options);
    if (signature !== this.signature) {
      this.signature = signature;
      this.select.replaceChildren(...options.map(([v, text]) => databaseOption(v, text)));
    }
    this.select.value = value;
  }
}

function databaseOption(value, text) {
  const node = document.createElement('option');
  node.value = value;
  node.textContent = text;
  return node;
}
