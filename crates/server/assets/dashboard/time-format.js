// Time and number formatting shared by the chart, the table and the CSV.
//
// The server speaks nanoseconds since the epoch. As JavaScript numbers they lose their
// last digits (doubles hold 2^53), which does not matter for drawing but does for the
// table and the CSV: those format the exact decimal text the server sent (see api.js).

export const MS_PER = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 };

/** "1h", "30d", "5m" → milliseconds; null for anything else. */
export function parseDurationMs(text) {
  const match = /^(\d+)([smhdw])$/.exec(text || '');
  return match ? Number(match[1]) * MS_PER[match[2]] : null;
}

/** Milliseconds → "1h", "6h", "7d"… (the largest unit that divides it). */
export function formatDurationMs(ms) {
  for (const unit of ['w', 'd', 'h', 'm', 's']) {
    if (ms >= MS_PER[unit] && ms % MS_PER[unit] === 0) return `${ms / MS_PER[unit]}${unit}`;
  }
  return `${Math.round(ms)}ms`;
}

/** A Date as RFC 3339 in UTC, without ".000" when the milliseconds are zero. */
export function isoUtc(ms) {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

/** Exact RFC 3339 UTC text of a decimal nanosecond timestamp ("1700000000123456789"). */
export function nsTextToRfc3339(nsText) {
  const ns = BigInt(nsText);
  const billion = 1000000000n;
  let seconds = ns / billion;
  let fraction = ns % billion;
  if (fraction < 0n) {
    fraction += billion;
    seconds -= 1n;
  }
  const whole = new Date(Number(seconds) * 1000).toISOString().slice(0, 19);
  if (fraction === 0n) return `${whole}Z`;
  const digits = fraction.toString().padStart(9, '0').replace(/0+$/, '');
  return `${whole}.${digits}Z`;
}

/** A value as a reader wants it on an axis or in a tooltip: 3 significant digits, SI. */
export function formatValue(value) {
  if (value === null || value === undefined || Number.isNaN(value)) return '–';
  const abs = Math.abs(value);
  if (abs === 0) return '0';
  const units = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
  for (const [size, suffix] of units) {
    if (abs >= size) return `${trimNumber(value / size)}${suffix}`;
  }
  if (abs < 0.001) return value.toExponential(2);
  return trimNumber(value);
}

function trimNumber(x) {
  const abs = Math.abs(x);
  const decimals = abs >= 100 ? 1 : abs >= 10 ? 2 : abs >= 1 ? 3 : 4;
  return String(Number(x.toFixed(decimals)));
}

const pad = (n) => String(n).padStart(2, '0');

/**
 * The parts of a time's label in `zone` ('utc' or 'local'): date "2026-11-24", day
 * "11-24", minutes "10:15", seconds "10:15:30".
 */
export function wallClock(ms, zone) {
  const d = new Date(ms);
  const local = zone === 'local';
  const [year, month, day] = local
    ? [d.getFullYear(), d.getMonth() + 1, d.getDate()]
    : [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate()];
  const [hours, minutes, seconds] = local
    ? [d.getHours(), d.getMinutes(), d.getSeconds()]
    : [d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()];
  const hm = `${pad(hours)}:${pad(minutes)}`;
  return {
    date: `${year}-${pad(month)}-${pad(day)}`,
    day: `${pad(month)}-${pad(day)}`,
    minutes: hm,
    seconds: `${hm}:${pad(seconds)}`,
  };
}

/** The name of the browser's time zone at `ms` as it abbreviates it ("CET", "GMT+5:30"). */
export function localZoneName(ms = Date.now()) {
  const parts = new Intl.DateTimeFormat(undefined, { timeZoneName: 'short' }).formatToParts(new Date(ms));
  return parts.find((part) => part.type === 'timeZoneName')?.value || 'local';
}

/**
 * The time of a tooltip, in the zone the axis shows first, then in the other:
 * {first, second}, each "2026-11-24 10:15:30 UTC" or "… (local)".
 */
export function formatTooltipTime(ms, zone = 'utc') {
  const date = new Date(ms);
  const utc = `${date.toISOString().replace('T', ' ').replace('.000Z', '').replace('Z', '')} UTC`;
  const local = `${date.toLocaleString(undefined, {
    year: 'numeric', month: '2-digit', day: '2-digit',
    hour: '2-digit', minute: '2-digit', second: '2-digit', timeZoneName: 'short',
  })} (local)`;
  return zone === 'local' ? { first: local, second: utc } : { first: utc, second: local };
}
