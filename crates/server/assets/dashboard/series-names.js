// Names of series for the legend, the tooltip and the CSV header.

/** The full name: `measurement.field{k=v,…}` (what the CSV header uses). */
export function fullName(series) {
  const tags = Object.entries(series.tags || {}).map(([k, v]) => `${k}=${v}`).join(',');
  return `${series.measurement}.${series.field}${tags ? `{${tags}}` : ''}`;
}

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
  // along with it) is label enough.
  const telling = fields ? undefined : varying.find((key) => distinct(key) === seriesList.length);
  if (telling) varying = [telling];
  return seriesList.map((s) => {
    const parts = varying.map((key) => `${key}=${s.tags[key] ?? ''}`);
    if (fields) parts.unshift(s.field);
    return parts.length ? parts.join(' ') : fullName(s);
  });
}
