// Names of series for the legend, the tooltip and the CSV header.

/** The full name: `measurement.field{k=v,…}` (what the CSV header uses). */
export function fullName(series) {
  const tags = Object.entries(series.tags || {}).map(([k, v]) => `${k}=${v}`).join(',');
  return `${series.measurement}.${series.field}${tags ? `{${tags}}` : ''}`;
}

/**
 * Short labels, as Grafana shows them: only the tags whose values differ between the
 * series (and the field when several are shown); the full name for a single series.
 */
export function shortLabels(seriesList) {
  if (seriesList.length <= 1) return seriesList.map(fullName);
  const keys = new Set(seriesList.flatMap((s) => Object.keys(s.tags || {})));
  const varying = [...keys].filter((key) => new Set(seriesList.map((s) => s.tags[key])).size > 1);
  const fields = new Set(seriesList.map((s) => s.field)).size > 1;
  return seriesList.map((s) => {
    const parts = varying.map((key) => `${key}=${s.tags[key] ?? ''}`);
    if (fields) parts.unshift(s.field);
    return parts.length ? parts.join(' ') : fullName(s);
  });
}
