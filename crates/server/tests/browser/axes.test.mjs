// The dashboard's time-axis ticks around both summer-time changes of 2026 in Berlin, in
// node (the browser test's zone has no summer time). Run with TZ=Europe/Berlin:
//
//   TZ=Europe/Berlin node axes.test.mjs crates/server/assets/dashboard
//
// The page's modules are plain ES modules in .js files; node reads .js as ES modules only
// under a package.json saying so, so the two modules are copied beside one first.

import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const assets = process.argv[2];
if (!assets || process.env.TZ !== 'Europe/Berlin') {
  console.error('usage: TZ=Europe/Berlin node axes.test.mjs ASSETS_DIR');
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), 'tickertape-axes-'));
let checks = 0;
function check(condition, what, seen) {
  if (!condition) throw new Error(`FAILED: ${what}\n  seen: ${JSON.stringify(seen)}`);
  checks += 1;
  console.log(`ok ${checks} - ${what}`);
}

try {
  for (const file of ['chart-axes.js', 'time-format.js']) copyFileSync(join(resolve(assets), file), join(dir, file));
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
  const { timeTicks } = await import(pathToFileURL(join(dir, 'chart-axes.js')).href);
  const HOUR = 3600e3;
  const ticks = (from, to, zone) => timeTicks(Date.parse(from), Date.parse(to), 10, zone);
  const utcHours = (list) => list.map((t) => new Date(t.ms).toISOString().slice(11, 16));

  // Autumn: 03:00 CEST becomes 02:00 CET at 01:00 UTC; the wall clock shows 02:00 twice.
  const autumn = ticks('2026-10-24T22:00:00Z', '2026-10-25T06:00:00Z', 'local');
  check(autumn.every((t, i) => i === 0 || t.ms > autumn[i - 1].ms), 'autumn: ticks increase', utcHours(autumn));
  check(autumn.every((t) => /(^|\s)\d\d:00$/.test(t.label)), 'autumn: every tick on a local hour', autumn.map((t) => t.label));
  check(autumn[0].label === '10-25 00:00' && autumn[0].ms === Date.parse('2026-10-24T22:00:00Z'),
    'autumn: local midnight is 22:00 UTC (CEST) and says the date', autumn[0]);
  check(autumn.at(-1).label === '07:00' && autumn.at(-1).ms === Date.parse('2026-10-25T06:00:00Z'),
    'autumn: 07:00 local is 06:00 UTC afterwards (CET)', autumn.at(-1));

  // Spring: 02:00 CET becomes 03:00 CEST at 01:00 UTC; 02:00 does not exist that night.
  const spring = ticks('2026-03-28T22:00:00Z', '2026-03-29T06:00:00Z', 'local');
  const labels = spring.map((t) => t.label);
  check(spring.every((t, i) => i === 0 || t.ms > spring[i - 1].ms), 'spring: no tick twice', utcHours(spring));
  check(labels.includes('01:00') && labels.includes('03:00') && !labels.includes('02:00'),
    'spring: 01:00 then 03:00 local, no 02:00', labels);
  check(spring.every((t, i) => i === 0 || t.ms - spring[i - 1].ms === HOUR), 'spring: one hour apart in time', utcHours(spring));

  // UTC: the same range ticks on UTC hours whatever the browser's zone.
  const utc = ticks('2026-03-28T22:00:00Z', '2026-03-29T06:00:00Z', 'utc');
  check(utc.every((t) => t.ms % HOUR === 0) && utc[0].label === '22:00', 'utc: ticks on UTC hours, labelled in UTC', utc.map((t) => t.label));
  console.log(`all ${checks} checks passed`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
