// MMS's controls above the chart: range presets and a custom range, resolution, aggregate,
// a counter's display, auto-refresh, and the time zone of the axis. They only report what the user asked for
// (`onChange(changes)`); app.js owns the state and calls `sync` with it.

import { AGGREGATES, DISPLAYS, RANGE_PRESETS, RESOLUTIONS } from './url-state.js';
import { isoUtc, localZoneName } from './time-format.js';

const byId = (id) => document.getElementById(id);

export class Controls {
  constructor({ onChange, onRefreshToggle }) {
    this.onChange = onChange;
    this.rangeButtons = segmented(byId('range'), [...RANGE_PRESETS, 'custom'], (value) => {
      if (value === 'custom') this.openCustomRange();
      else onChange({ range: value, start: '', end: '' });
    });
    this.resolutionButtons = segmented(byId('resolution'), RESOLUTIONS,
      (value) => onChange({ resolution: value }));

    this.agg = byId('agg');
    this.agg.append(option('', 'avg (default)'), ...AGGREGATES.map((a) => option(a, a)));
    this.agg.addEventListener('change', () => onChange({ agg: this.agg.value }));

    this.display = byId('display');
    this.display.addEventListener('change', () => onChange({ display: this.display.value }));

    this.customRange = byId('custom-range');
    this.start = byId('start');
    this.end = byId('end');
    byId('apply-range').addEventListener('click', () => this.applyCustomRange());
    for (const input of [this.start, this.end]) {
      input.addEventListener('keydown', (event) => {
        if (event.key === 'Enter') this.applyCustomRange();
      });
    }

    this.tz = byId('tz');
    this.tz.append(option('', 'UTC'), option('local', `local (${localZoneName()})`));
    this.tz.addEventListener('change', () => onChange({ tz: this.tz.value }));

    this.refresh = byId('refresh');
    this.refreshLabel = byId('refresh-label');
    this.refresh.addEventListener('change', () => onRefreshToggle(this.refresh.checked));
  }

  /** Shows `state`; `view` = {isCounter, startMs, endMs, refresh: {allowed, on, everyMs}}. */
  sync(state, view) {
    const rangeValue = state.start ? 'custom' : state.range;
    mark(this.rangeButtons, rangeValue);
    mark(this.resolutionButtons, state.resolution);
    this.customRange.hidden = !state.start && !this.customOpen;
    if (state.start) {
      this.start.value = state.start;
      this.end.value = state.end;
    }
    selectValue(this.agg, state.agg);
    // Under display the windows are sums: the aggregate is fixed unless a link set one.
    const fixedSum = view.isCounter && !state.agg;
    this.agg.disabled = fixedSum;
    this.agg.options[0].textContent = fixedSum ? 'sum (counter)' : 'avg (default)';
    // A counter is shown as sums per window, per second or in total (MMS's display).
    byId('display-control').hidden = !view.isCounter && !state.display;
    const display = state.display || (view.isCounter ? DISPLAYS[0] : '');
    if (display) selectValue(this.display, display);

    this.tz.value = state.tz;

    const { allowed, on, everyMs } = view.refresh;
    this.refresh.disabled = !allowed;
    this.refresh.checked = allowed && on;
    this.refreshLabel.textContent = allowed
      ? `Auto-refresh every ${everyMs / 1000}s`
      : 'Auto-refresh (for “last N” ranges)';
    this.lastView = view;
  }

  /** Opens the custom-range inputs, filled with the range shown now. */
  openCustomRange() {
    this.customOpen = true;
    this.customRange.hidden = false;
    mark(this.rangeButtons, 'custom');
    if (!this.start.value && this.lastView) {
      this.start.value = isoUtc(Math.floor(this.lastView.startMs / 1000) * 1000);
      this.end.value = isoUtc(Math.ceil(this.lastView.endMs / 1000) * 1000);
    }
    this.start.focus();
  }

  applyCustomRange() {
    const start = this.start.value.trim();
    const end = this.end.value.trim();
    if (!start) {
      this.start.focus();
      return;
    }
    this.customOpen = false;
    this.onChange({ start, end, range: '' });
  }
}

/** A row of toggle buttons in `container`; `onPick(value)` on click. */
function segmented(container, values, onPick) {
  return values.map((value) => {
    const button = document.createElement('button');
    button.type = 'button';
    button.dataset.value = value;
    button.textContent = value;
    button.setAttribute('aria-pressed', 'false');
    button.addEventListener('click', () => onPick(value));
    container.append(button);
    return button;
  });
}

function mark(buttons, value) {
  for (const button of buttons) {
    button.setAttribute('aria-pressed', String(button.dataset.value === value));
  }
}

function option(value, text) {
  const node = document.createElement('option');
  node.value = value;
  node.textContent = text;
  return node;
}

/** Selects `value`, adding it when a link carries one the list lacks (shown, not dropped). */
function selectValue(select, value) {
  if (![...select.options].some((o) => o.value === value)) {
    select.append(option(value, `${value} (unknown)`));
  }
  select.value = value;
}
