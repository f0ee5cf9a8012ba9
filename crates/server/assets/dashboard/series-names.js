// Names of series for the legend, the tooltip and the CSV header.

/** The full name: `measurement.field{k=v,…}` (what the CSV header uses). */
export function fullName(series) {
  const tags = Object.entries(series.tags || {}).map(([k, v]) => `${k}=${v}`).join(',');
  return `${series.measurement}.${series.field}${tags ? `{${tags}}` : ''}`;
}

/** Names a reader recognises a series by, preferred when several tags tell the series
 * apart (the same list as `tickertape plot`'s legend, `crates/cli/src/cmd/plot.rs`). */
const NAMING_KEYS = ['host', 'hostname', 'instance', 'name', 'id', 'device'];

/**
 * Short labels, as Grafana shows them: only the tags whose values differ between the
 * series (and the field when several are shown), or the one tag that alone tells them
 * apart; the full name for a single series.
 */
export function shortLabels(seriesList) {
  if (seriesList.length <= 1) return seriesList.map(fullName);
  const keys = new Set(seriesList.flatMap((s) => Object.keys(s.tags || {})));
  const distinct = (key) => new Set(seriesList.map((s) => s.tags[key])).size;
  let varying = [...keys].sort().filter((key) => distinct(key) > 1);
  const fields = new Set(seriesList.map((s) => s.field)).size > 1;
  // One tag that tells every series apart (hostname, with region and datacenter varying
  // along with it) is label enough; a host-like name first when several do.
  if (!fields) {
    const telling = varying.filter((key) => distinct(key) === seriesList.length);
    const named = NAMING_KEYS.find((key) => telling.includes(key)) ?? telling[0];
    if (named) varying = [named];
  }
  return seriesList.map((s) => {
    const parts = varying.map((key) => `${key}=${s.tags[key] ?? ''}`);
    if (fields) parts.unshift(s.field);
    return parts.length ? parts.join(' ') : fullName(s);
  });
}
