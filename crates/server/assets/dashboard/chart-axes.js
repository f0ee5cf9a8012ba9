// Axis ticks: "nice" values on the value axis, and on the time axis UTC instants at a
// step a reader recognises (1 min, 5 min, 1 h, 6 h, 1 day, …), labelled in UTC.

const MINUTE = 60e3;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const TIME_STEPS = [
  1e3, 2e3, 5e3, 10e3, 15e3, 30e3,
  MINUTE, 2 * MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE,
  HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR,
  DAY, 2 * DAY, 7 * DAY, 14 * DAY, 30 * DAY, 91 * DAY, 365 * DAY,
];

/** Ticks over [startMs, endMs] at most about `maxTicks` of them: [{ms, label}]. */
export function timeTicks(startMs, endMs, maxTicks) {
  const span = Math.max(1, endMs - startMs);
  const step = TIME_STEPS.find((s) => span / s <= maxTicks) ?? TIME_STEPS[TIME_STEPS.length - 1];
  const ticks = [];
  // Steps of a day and more are aligned to UTC midnight (weeks to the epoch's, a Thursday:
  // good enough); shorter ones to multiples of themselves, which is the same thing in UTC.
  const first = Math.ceil(startMs / step) * step;
  for (let ms = first; ms <= endMs && ticks.length < 1000; ms += step) {
    ticks.push({ ms, label: timeLabel(ms, step, span) });
  }
  return ticks;
}

function timeLabel(ms, step, span) {
  const iso = new Date(ms).toISOString(); // 2026-11-24T10:15:30.000Z
  const date = iso.slice(5, 10); // 11-24
  const minutes = iso.slice(11, 16); // 10:15
  if (step >= DAY) return span > 180 * DAY ? iso.slice(0, 10) : date;
  if (step < MINUTE) return iso.slice(11, 19);
  // The date where a day starts, or on every tick when the range spans several days.
  if (span > 2 * DAY || minutes === '00:00') return `${date} ${minutes}`;
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
