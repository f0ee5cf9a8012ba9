// The points behind the chart as a table (the first rows) and as CSV (all of them): the
// same merged answer the chart draws — one row per time, one column per series, times in
// RFC 3339 UTC exactly as the server sent them (nanoseconds included), empty where a
// series has no point.

import { nsTextToRfc3339 } from './time-format.js';

export const TABLE_ROWS = 500;

/** Fills `table` with the first TABLE_ROWS rows of `answer`; the note says what is shown. */
export function renderTable(table, note, answer, columns) {
  const head = document.createElement('thead');
  const headRow = document.createElement('tr');
  headRow.append(cell('th', 'time (UTC)'));
  for (const column of columns) {
    const th = cell('th', column.label);
    th.title = column.name;
    headRow.append(th);
  }
  head.append(headRow);

  const body = document.createElement('tbody');
  const shown = Math.min(TABLE_ROWS, answer.timesText.length);
  for (let row = 0; row < shown; row += 1) {
    const tr = document.createElement('tr');
    tr.append(cell('td', nsTextToRfc3339(answer.timesText[row])));
    for (const series of answer.series) {
      const value = series.values[row];
      tr.append(cell('td', value === null ? '' : String(value)));
    }
    body.append(tr);
  }
  table.replaceChildren(head, body);

  const total = answer.timesText.length;
  table.dataset.rows = String(shown);
  if (total === 0) note.textContent = 'No points in this range.';
  else if (shown < total) {
    note.textContent = `First ${shown} of ${total} rows shown; the CSV has all ${total}.`;
  } else note.textContent = `${total} rows.`;
}

function cell(tag, text) {
  const node = document.createElement(tag);
  node.textContent = text;
  return node;
}

/** The CSV of `answer`: header `time,<series name>…`, then every row. */
export function toCsv(answer, columns) {
  const lines = [['time', ...columns.map((c) => c.name)].map(csvField).join(',')];
  for (let row = 0; row < answer.timesText.length; row += 1) {
    const fields = [nsTextToRfc3339(answer.timesText[row])];
    for (const series of answer.series) {
      const value = series.values[row];
      fields.push(value === null ? '' : String(value));
    }
    lines.push(fields.join(','));
  }
  return `${lines.join('\r\n')}\r\n`;
}

function csvField(text) {
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Offers `text` as a download named `filename`. */
export function download(filename, text) {
  const url = URL.createObjectURL(new Blob([text], { type: 'text/csv;charset=utf-8' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
