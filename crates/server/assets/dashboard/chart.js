// The line chart, drawn on a canvas: several series on one time axis (null = gap), the
// time axis in UTC or the browser's zone (`setTimeZone`), a shared hover tooltip, drag to zoom into a range, double-click to zoom out.
// Charts of one page can share a crosshair: `onHover(ms)` reports where the pointer is and
// `showLinkedCrosshair(ms)` draws that time's line on another chart (Grafana's shared
// crosshair); the zoom callbacks are the page's, which zooms every chart.
//
// The chart never goes blank: without data it still draws its frame and axes and shows a
// message over them ("No data in this range", an API error, "Loading…").
//
// For tests and tools the root element carries what was drawn:
// data-state (ok | empty | error | loading | idle), data-series-drawn, data-points-drawn.

import { timeTicks, valueTicks } from './chart-axes.js';
import { formatTooltipTime, formatValue, localZoneName } from './time-format.js';

// Tableau's ten, then hues spread by the golden angle: neighbours never look alike.
const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f',
  '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#79706e'];

export function seriesColor(index) {
  if (index < PALETTE.length) return PALETTE[index];
  return `hsl(${Math.round((index * 137.508) % 360)}, 55%, 45%)`;
}

const PAD = { top: 12, right: 14, bottom: 26, minLeft: 40 };
const MIN_DRAG_PX = 5;
const TOOLTIP_MAX_ROWS = 12;

export class Chart {
  /**
   * `root` holds the canvas; `onZoom(startMs, endMs)` and `onZoomOut()` are the user's;
   * `onHover(ms)` the time under the pointer, null when it leaves the plot.
   */
  constructor(root, { onZoom, onZoomOut, onHover = () => {} }) {
    this.root = root;
    this.onZoom = onZoom;
    this.onZoomOut = onZoomOut;
    this.onHover = onHover;
    this.canvas = element('canvas', 'chart-canvas');
    this.canvas.setAttribute('role', 'img');
    this.selection = element('div', 'chart-selection');
    this.crosshair = element('div', 'chart-crosshair');
    this.tooltip = element('div', 'chart-tooltip');
    this.message = element('div', 'chart-message');
    this.selection.hidden = this.crosshair.hidden = this.tooltip.hidden = this.message.hidden = true;
    root.append(this.canvas, this.selection, this.crosshair, this.tooltip, this.message);

    this.data = { times: [], series: [], startMs: 0, endMs: 1 };
    this.plot = { left: PAD.minLeft, top: PAD.top, width: 1, height: 1 };
    this.drag = null;
    this.hoverX = null;
    this.linkedMs = null; // the time another chart's pointer is at, or null
    this.zone = 'utc'; // the time axis' zone: 'utc' or 'local'
    this.root.dataset.timeZone = this.zone;
    this.setState('idle');

    new ResizeObserver(() => this.draw()).observe(root);
    // The colours come from the stylesheet, whose dark theme follows the system's.
    window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => this.draw());
    this.bindPointer();
  }

  /** The plot's width in CSS pixels, before any data decides the labels' width. */
  plotWidth() {
    return Math.max(2, this.root.clientWidth - PAD.minLeft - 20 - PAD.right);
  }

  /** `series`: [{label, color, values (aligned with times, null = no point), hidden}]. */
  setData({ times, series, startMs, endMs }) {
    this.data = { times, series, startMs, endMs };
    this.draw();
    if (this.hoverX !== null) this.showTooltip(this.hoverX);
  }

  /** The zone of the time axis and the tooltip's first line: 'utc' or 'local'. */
  setTimeZone(zone) {
    if (zone === this.zone) return;
    this.zone = zone;
    this.root.dataset.timeZone = zone;
    this.draw();
  }

  /** A message over the chart; `kind` error | empty | loading, or '' to remove it. */
  setMessage(kind, text) {
    this.message.hidden = !kind;
    this.message.textContent = text || '';
    this.message.dataset.kind = kind || '';
    if (kind) this.setState(kind);
  }

  setState(state) {
    this.root.dataset.state = state;
  }

  draw() {
    const { canvas } = this;
    const width = this.root.clientWidth;
    const height = this.root.clientHeight;
    if (width === 0 || height === 0) return;
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
    const ctx = canvas.getContext('2d');
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    const colors = themeColors(this.root);
    ctx.fillStyle = colors.background;
    ctx.fillRect(0, 0, width, height);
    ctx.font = `12px ${colors.font}`;

    const visible = this.data.series.filter((s) => !s.hidden);
    const yRange = valueRange(visible);
    const yAxis = valueTicks(yRange.min, yRange.max, Math.max(2, Math.floor(height / 60)));
    const labelWidth = Math.max(...yAxis.ticks.map((v) => ctx.measureText(formatValue(v)).width));
    const left = Math.max(PAD.minLeft, Math.ceil(labelWidth) + 12);
    this.plot = {
      left,
      top: PAD.top,
      width: Math.max(1, width - left - PAD.right),
      height: Math.max(1, height - PAD.top - PAD.bottom),
    };
    this.yAxis = yAxis;
    this.drawAxes(ctx, colors);
    if (this.linkedMs !== null && this.hoverX === null) this.placeLinkedCrosshair();
    const drawn = this.drawSeries(ctx, visible);
    this.root.dataset.seriesDrawn = String(drawn.series);
    this.root.dataset.pointsDrawn = String(drawn.points);
    canvas.setAttribute('aria-label', `chart of ${drawn.series} series, ${drawn.points} points`);
  }

  drawAxes(ctx, colors) {
    const { left, top, width, height } = this.plot;
    const { startMs, endMs } = this.data;
    ctx.strokeStyle = colors.grid;
    ctx.fillStyle = colors.text;
    ctx.lineWidth = 1;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    for (const value of this.yAxis.ticks) {
      const y = Math.round(this.yOf(value)) + 0.5;
      line(ctx, left, y, left + width, y);
      ctx.fillText(formatValue(value), left - 6, y);
    }
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    const maxTicks = Math.max(2, Math.floor(width / 90));
    const zoneName = this.zone === 'local' ? localZoneName(endMs) : 'UTC';
    // A label that would run into the zone's name at the axis' end keeps its grid line only.
    const labelsEnd = left + width - ctx.measureText(zoneName).width - 6;
    const ticks = timeTicks(startMs, endMs, maxTicks, this.zone);
    for (const tick of ticks) {
      const x = Math.round(this.xOf(tick.ms)) + 0.5;
      line(ctx, x, top, x, top + height);
      if (x + ctx.measureText(tick.label).width / 2 <= labelsEnd) ctx.fillText(tick.label, x, top + height + 6);
    }
    // Where the first tick fell, for a reader of the page (and its test) who cannot read
    // the canvas.
    this.root.dataset.firstTick = ticks.length ? `${ticks[0].label}@${ticks[0].ms}` : '';
    ctx.textAlign = 'right';
    ctx.fillStyle = colors.muted;
    ctx.fillText(zoneName, left + width, top + height + 6 + 0);
    ctx.strokeStyle = colors.axis;
    ctx.strokeRect(left + 0.5, top + 0.5, width - 1, height - 1);
  }

  /** Draws the visible series, clipped to the plot; how many series and points it drew. */
  drawSeries(ctx, visible) {
    const { times } = this.data;
    const { left, top, width, height } = this.plot;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    ctx.lineWidth = 1.5;
    ctx.lineJoin = 'round';
    // Points far apart are marked, so that a lone point between gaps is seen.
    const sparse = times.length > 0 && width / times.length > 8;
    let seriesDrawn = 0;
    let pointsDrawn = 0;
    for (const series of visible) {
      ctx.strokeStyle = ctx.fillStyle = series.color;
      ctx.beginPath();
      let open = false;
      let drawnHere = 0;
      for (let i = 0; i < times.length; i += 1) {
        const value = series.values[i];
        if (value === null || value === undefined || !Number.isFinite(value)) {
          open = false;
          continue;
        }
        const x = this.xOf(times[i]);
        const y = this.yOf(value);
        const isolated = !open && !Number.isFinite(series.values[i + 1] ?? NaN);
        if (open) ctx.lineTo(x, y);
        else ctx.moveTo(x, y);
        if (sparse || isolated) ctx.fillRect(x - 2, y - 2, 4, 4);
        open = true;
        drawnHere += 1;
      }
      ctx.stroke();
      if (drawnHere > 0) seriesDrawn += 1;
      pointsDrawn += drawnHere;
    }
    ctx.restore();
    return { series: seriesDrawn, points: pointsDrawn };
  }

  xOf(ms) {
    const { startMs, endMs } = this.data;
    return this.plot.left + ((ms - startMs) / Math.max(1, endMs - startMs)) * this.plot.width;
  }

  msOf(x) {
    const { startMs, endMs } = this.data;
    return startMs + ((x - this.plot.left) / this.plot.width) * (endMs - startMs);
  }

  yOf(value) {
    const { min, max } = this.yAxis;
    return this.plot.top + (1 - (value - min) / (max - min)) * this.plot.height;
  }

  bindPointer() {
    const { canvas } = this;
    canvas.addEventListener('pointerdown', (event) => {
      if (event.button !== 0 || !this.inPlot(event.offsetX)) return;
      this.drag = { fromX: this.clampX(event.offsetX), toX: this.clampX(event.offsetX) };
      canvas.setPointerCapture(event.pointerId);
    });
    canvas.addEventListener('pointermove', (event) => {
      if (this.drag) {
        this.drag.toX = this.clampX(event.offsetX);
        this.showSelection();
      }
      this.hoverX = this.inPlot(event.offsetX) ? event.offsetX : null;
      if (this.hoverX === null) this.hideTooltip();
      else this.showTooltip(this.hoverX);
      this.onHover(this.hoverX === null ? null : this.msOf(this.hoverX));
    });
    canvas.addEventListener('pointerup', () => this.endDrag());
    canvas.addEventListener('pointercancel', () => {
      this.drag = null;
      this.selection.hidden = true;
    });
    canvas.addEventListener('pointerleave', (event) => {
      if (event.pointerType === 'mouse') {
        this.hoverX = null;
        this.hideTooltip();
        this.onHover(null);
      }
    });
    canvas.addEventListener('dblclick', (event) => {
      event.preventDefault();
      this.onZoomOut();
    });
  }

  endDrag() {
    const drag = this.drag;
    this.drag = null;
    this.selection.hidden = true;
    if (!drag || Math.abs(drag.toX - drag.fromX) < MIN_DRAG_PX) return;
    const from = this.msOf(Math.min(drag.fromX, drag.toX));
    const to = this.msOf(Math.max(drag.fromX, drag.toX));
    this.onZoom(Math.round(from), Math.round(to));
  }

  inPlot(x) {
    return x >= this.plot.left && x <= this.plot.left + this.plot.width;
  }

  clampX(x) {
    return Math.min(this.plot.left + this.plot.width, Math.max(this.plot.left, x));
  }

  showSelection() {
    const { fromX, toX } = this.drag;
    Object.assign(this.selection.style, {
      left: `${Math.min(fromX, toX)}px`,
      width: `${Math.abs(toX - fromX)}px`,
      top: `${this.plot.top}px`,
      height: `${this.plot.height}px`,
    });
    this.selection.hidden = false;
  }

  /** The values of every visible series at the time nearest to `x`. */
  showTooltip(x) {
    const { times, series } = this.data;
    const index = nearestIndex(times, this.msOf(x));
    if (index < 0) {
      this.hideTooltip();
      return;
    }
    const pointX = this.xOf(times[index]);
    this.crosshair.classList.remove('linked');
    Object.assign(this.crosshair.style, {
      left: `${Math.round(pointX)}px`, top: `${this.plot.top}px`, height: `${this.plot.height}px`,
    });
    this.crosshair.hidden = false;

    const time = formatTooltipTime(times[index], this.zone);
    const rows = [element('div', 'tooltip-time', time.first), element('div', 'tooltip-local', time.second)];
    const visible = series.filter((s) => !s.hidden);
    for (const s of visible.slice(0, TOOLTIP_MAX_ROWS)) {
      const row = element('div', 'tooltip-row');
      const swatch = element('span', 'swatch');
      swatch.style.background = s.color;
      row.append(swatch, element('span', 'tooltip-label', s.label),
        element('span', 'tooltip-value', formatValue(s.values[index])));
      rows.push(row);
    }
    if (visible.length > TOOLTIP_MAX_ROWS) {
      rows.push(element('div', 'tooltip-more', `… ${visible.length - TOOLTIP_MAX_ROWS} more series`));
    }
    this.tooltip.replaceChildren(...rows);
    this.tooltip.hidden = false;
    // Beside the crosshair, on the side with room.
    const room = this.root.clientWidth - pointX;
    const width = this.tooltip.offsetWidth;
    const left = room > width + 16 ? pointX + 12 : Math.max(0, pointX - width - 12);
    this.tooltip.style.left = `${left}px`;
    this.tooltip.style.top = `${this.plot.top + 4}px`;
  }

  hideTooltip() {
    this.tooltip.hidden = true;
    this.crosshair.hidden = true;
  }

  /**
   * The crosshair alone at `ms` (where another chart is hovered), or none for null. Not
   * while this chart has the pointer itself: its own tooltip owns the crosshair then.
   */
  showLinkedCrosshair(ms) {
    this.linkedMs = ms;
    if (this.hoverX !== null) return;
    if (ms === null) this.crosshair.hidden = true;
    else this.placeLinkedCrosshair();
  }

  placeLinkedCrosshair() {
    const { times, startMs, endMs } = this.data;
    const index = nearestIndex(times, this.linkedMs);
    // On this chart's nearest point, as its own tooltip would; on the time itself without one.
    const ms = index >= 0 ? times[index] : this.linkedMs;
    const outside = this.linkedMs < startMs || this.linkedMs > endMs;
    Object.assign(this.crosshair.style, {
      left: `${Math.round(this.xOf(ms))}px`, top: `${this.plot.top}px`, height: `${this.plot.height}px`,
    });
    this.crosshair.hidden = outside;
    this.crosshair.classList.add('linked');
  }
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function line(ctx, x1, y1, x2, y2) {
  ctx.beginPath();
  ctx.moveTo(x1, y1);
  ctx.lineTo(x2, y2);
  ctx.stroke();
}

/** Min and max of every finite value of `series`; 0..1 when there is none. */
function valueRange(series) {
  let min = Infinity;
  let max = -Infinity;
  for (const s of series) {
    for (const v of s.values) {
      if (v === null || !Number.isFinite(v)) continue;
      if (v < min) min = v;
      if (v > max) max = v;
    }
  }
  return min <= max ? { min, max } : { min: 0, max: 1 };
}

/** The index of the time nearest to `ms` in ascending `times`; -1 when empty. */
function nearestIndex(times, ms) {
  if (times.length === 0) return -1;
  let low = 0;
  let high = times.length - 1;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (times[mid] < ms) low = mid + 1;
    else high = mid;
  }
  if (low > 0 && ms - times[low - 1] < times[low] - ms) return low - 1;
  return low;
}

/** The chart's colours from the page's CSS custom properties (one theme, one place). */
function themeColors(root) {
  const style = getComputedStyle(root);
  const get = (name, fallback) => style.getPropertyValue(name).trim() || fallback;
  return {
    background: get('--chart-bg', '#ffffff'),
    grid: get('--chart-grid', '#e6e8ec'),
    axis: get('--chart-axis', '#c4c8d0'),
    text: get('--chart-text', '#3b4150'),
    muted: get('--chart-muted', '#8a90a0'),
    font: get('--chart-font', 'system-ui, sans-serif'),
  };
}
