// The tag filters: one chip per `tag` condition of the view (ANDed, as in the query API),
// and two pickers to add one — a key of the measurement, then one of that key's values.
// Conditions from a link other than K:V (K!=V, K=~RE …) are shown and kept as written.

import { listNames } from './api.js';
import { Picker } from './pickers.js';

export class TagFilters {
  /** `measurement()` → the current one; `onChange(tags)` with the new list of conditions. */
  constructor({ measurement, onChange }) {
    this.measurement = measurement;
    this.onChange = onChange;
    this.tags = [];
    this.chips = document.getElementById('tag-chips');
    this.keyInput = document.getElementById('tag-key');
    this.valueInput = document.getElementById('tag-value');

    this.keyPicker = new Picker(this.keyInput, {
      load: (prefix, signal) => listNames('tag_keys', { measurement: this.measurement() }, prefix, signal),
      onPick: (key) => this.pickKey(key),
    });
    this.valuePicker = new Picker(this.valueInput, {
      load: (prefix, signal) => listNames('tag_values',
        { measurement: this.measurement(), key: this.keyInput.value }, prefix, signal),
      onPick: (value) => this.addCondition(`${this.keyInput.value}:${value}`),
    });
  }

  pickKey(key) {
    if (!key) return;
    this.valueInput.disabled = false;
    this.valueInput.value = '';
    this.valueInput.focus();
  }

  /** A filter begun from elsewhere (the Series view): `key` chosen, its values offered. */
  startWith(key) {
    if (this.keyInput.disabled) return;
    this.keyInput.value = key;
    this.pickKey(key);
  }

  addCondition(condition) {
    this.keyInput.value = '';
    this.valueInput.value = '';
    this.valueInput.disabled = true;
    if (this.tags.includes(condition)) return;
    this.onChange([...this.tags, condition]);
  }

  /** Shows `tags` (the view's conditions) as chips. */
  sync(tags, enabled) {
    this.tags = [...tags];
    this.keyInput.disabled = !enabled;
    this.chips.replaceChildren(...this.tags.map((tag, index) => this.chip(tag, index)));
  }

  chip(tag, index) {
    const item = document.createElement('li');
    item.className = 'chip';
    item.dataset.tag = tag;
    const text = document.createElement('span');
    text.textContent = tag;
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.textContent = '×';
    remove.setAttribute('aria-label', `remove filter ${tag}`);
    remove.addEventListener('click', () => {
      this.onChange(this.tags.filter((_, i) => i !== index));
    });
    item.append(text, remove);
    return item;
  }
}
