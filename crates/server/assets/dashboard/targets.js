// The Targets view: what the server scrapes (`serve --scrape-config`), from
// `GET /prometheus/api/v1/targets` in Prometheus' shape. One row per active target — its
// job, URL, health, labels, when it was last scraped, how long that took and the last
// error — and how many targets relabeling dropped. Loaded when it opens, then again every
// REFRESH_MS while open (a scrape's outcome changes with each interval) and on "Load again".

import { ApiError, scrapeTargets } from './api.js';

/** How often an open view asks again. */
export const REFRESH_MS = 5000;

const byId = (id) => document.getElementById(id);

/** "3 s ago", "2 min ago"; "never" for Go's zero time, which Prometheus shows before a scrape. */
export function ago(iso, nowMs) {
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms) || ms <= 0 || iso.startsWith('0001-')) return 'never';
  const seconds = Math.max(0, Math.round((nowMs - ms) / 1000));
  if (seconds < 120) return `${seconds} s ago`;
  const minutes = Math.round(seconds / 60);
  return minutes < 120 ? `${minutes} min ago` : `${Math.round(minutes / 60)} h ago`;
}

/** A duration in seconds as ms or s with three significant digits. */
export function duration(seconds) {
  if (!Number.isFinite(seconds)) return '';
  return seconds < 1 ? `${(seconds * 1000).toPrecision(3)} ms` : `${seconds.toPrecision(3)} s`;
}

export class TargetsView {
  /** The view in `#targets`; `onClose()` is its × button. */
  constructor({ onClose }) {
    this.element = byId('targets');
    this.table = byId('targets-table');
    this.error = byId('targets-error');
    this.note = byId('targets-note');
    byId('targets-close').addEventListener('click', onClose);
    byId('targets-reload').addEventListener('click', () => this.load());
    this.isOpen = false;
    this.request = null; // the load in flight: {controller}
    this.timer = null;
  }

  /** Shows or hides the view as `state` says; loads it when it opens. */
  sync(state) {
    const open = state.targets === 'open';
    this.element.hidden = !open;
    if (open && !this.isOpen) {
      this.isOpen = true;
      this.load();
      this.timer = setInterval(() => this.load(), REFRESH_MS);
    } else if (!open && this.isOpen) {
      this.isOpen = false;
      clearInterval(this.timer);
      this.timer = null;
      if (this.request) this.request.controller.abort();
      this.request = null;
    }
  }

  async load() {
    if (this.request) return; // one load at a time; the timer's next tick asks again
    const request = { controller: new AbortController() };
    this.request = request;
    try {
      const answer = await scrapeTargets(request.controller.signal);
      if (this.request !== request) return;
      this.error.hidden = true;
      this.render(answer.data || {});
      this.element.dataset.state = 'ok';
    } catch (error) {
      if (error.name === 'AbortError' || this.request !== request) return;
      const status = error instanceof ApiError && error.status ? ` (HTTP ${error.status})` : '';
      this.error.textContent = `Cannot read the targets${status}: ${error.message}`;
      this.error.hidden = false;
      this.element.dataset.state = 'error';
    } finally {
      if (this.request === request) this.request = null;
    }
  }

  render(data) {
    const active = Array.isArray(data.activeTargets) ? data.activeTargets : [];
    const dropped = Array.isArray(data.droppedTargets) ? data.droppedTargets : [];
    const count = (health) => active.filter((t) => t.health === health).length;
    this.note.textContent = active.length || dropped.length
      ? `${count('up')} up · ${count('down')} down · ${count('unknown')} not scraped yet`
        + ` · ${dropped.length} dropped by relabeling · at ${new Date().toLocaleTimeString()}`
      : 'this server scrapes nothing: start it with --scrape-config prometheus.yml';
    const now = Date.now();
    const head = document.createElement('thead');
    head.append(row('th', ['Job', 'Endpoint', 'State', 'Labels', 'Last scrape', 'Duration', 'Error']));
    const body = document.createElement('tbody');
    for (const target of active) {
      const labels = Object.entries(target.labels || {}).map(([k, v]) => `${k}="${v}"`).join(', ');
      const tr = row('td', [
        target.scrapePool, target.scrapeUrl, target.health, labels,
        ago(target.lastScrape || '', now), duration(target.lastScrapeDuration), target.lastError || '',
      ]);
      tr.dataset.health = target.health;
      tr.dataset.url = target.scrapeUrl;
      tr.children[2].className = `health health-${target.health}`;
      body.append(tr);
    }
    this.table.replaceChildren(head, body);
  }
}

function row(cell, texts) {
  const tr = document.createElement('tr');
  for (const text of texts) {
    const element = document.createElement(cell);
    element.textContent = text;
    tr.append(element);
  }
  return tr;
}
