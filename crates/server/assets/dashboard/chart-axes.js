// Axis ticks: "nice" values on the value axis, and on the time axis instants at a step a
// reader recognises (1 min, 5 min, 1 h, 6 h, 1 day, …), on round times of the zone shown,
// UTC or the browser's own, and labelled in it.

import { wallClock } from './time-format.js';

const MINUTE = 60e3;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const TIME_STEPS = [
  1e3, 2e3, 5e3, 10e3, 15e3, 30e3,
  MINUTE, 2 * MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE,
  HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR,
  DAY, 2 * DAY, 7 * DAY, 14 * DAY, 30 * DAY, 91 * DAY, 365 * DAY,
];

/**
 * Ticks over [startMs, endMs], at most about `maxTicks` of them: [{ms, label}], on round
 * times of `zone` ('utc' or 'local').
 */
export function timeTicks(startMs, endMs, maxTicks, zone = 'utc') {
  const span = Math.max(1, endMs - startMs);
  const step = TIME_STEPS.find((s) => span / s <= maxTicks) ?? TIME_STEPS[TIME_STEPS.length - 1];
  const ticks = [];
  // Round times of the zone: multiples of the step in its wall-clock time, days from its
  // midnights (weeks from the epoch's, a Thursday: good enough). A local wall-clock time
  // becomes an instant through the zone's offset at that time, so ticks stay on the hour
  // across a change of summer time.
  const offset = (ms) => (zone === 'local' ? -new Date(ms).getTimezoneOffset() * MINUTE : 0);
  const firstWall = Math.ceil((startMs + offset(startMs)) / step) * step;
  for (let wall = firstWall; ticks.length < 1000; wall += step) {
    const guess = wall - offset(startMs);
    const ms = wall - offset(guess);
    if (ms > endMs) break;
    // A wall-clock time that a spring-forward skips maps onto the tick before: kept once.
    const last = ticks[ticks.length - 1];
    if (ms >= startMs && (!last || ms > last.ms)) ticks.push({ ms, label: timeLabel(ms, step, span, zone) });
  }
  return ticks;
}

function timeLabel(ms, step, span, zone) {
  const { date, day, minutes, seconds } = wallClock(ms, zone);
  if (step >= DAY) return span > 180 * DAY ? date : day;
  if (step < MINUTE) return seconds;
  // The date where a day starts, or on every tick when the range spans several days.
  if (span > 2 * DAY || minutes === '00:00') return `${day} ${minutes}`;
  return minutes;
}

/** About `count` round values covering [min, max]: {ticks, min, max} (the widened range). */
export function valueTicks(min, max, count) {
  if (!(max > min)) {
    const pad = min === 0 ? 1 : Math.abs(min) * 0.1;
    min -= pad;
    max += pad;
  }
  const step = niceStep((max - min) / Math.max(1, count));
  const low = Math.floor(min / step) * step;
  const high = Math.ceil(max / step) * step;
  const ticks = [];
  for (let v = low; v <= high + step / 2 && ticks.length < 50; v += step) {
    // Rounded, so that 0.1 + 0.2 shows as 0.3 and a tick lands on 0 exactly.
    ticks.push(Number(v.toPrecision(12)));
  }
  return { ticks, min: low, max: high };
}

function niceStep(raw) {
  const power = 10 ** Math.floor(Math.log10(raw));
  const fraction = raw / power;
  const nice = fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 2.5 ? 2.5 : fraction <= 5 ? 5 : 10;
  return nice * power;
}
