/** Turning measurements into the table: statistics, formats, verdicts, text and Markdown. */

export function median(values) {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** The `fraction` quantile (0.9: 90th percentile) by the nearest-rank method. */
export function percentile(values, fraction) {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))] : NaN;
}

const MB = 1024 * 1024;

export const format = {
  seconds: (s) => (Number.isFinite(s) ? `${s.toFixed(2)} s` : 'n/a'),
  megabytes: (bytes) => (Number.isFinite(bytes) ? `${(bytes / MB).toFixed(1)} MB` : 'n/a'),
  rps: (n) => (Number.isFinite(n) ? `${Math.round(n).toLocaleString('en-US')}/s` : 'n/a'),
  ms: (n) => (Number.isFinite(n) ? `${n < 10 ? n.toFixed(2) : n.toFixed(1)} ms` : 'n/a'),
  micros: (n) => (Number.isFinite(n) ? `${Math.round(n)} µs` : 'n/a'),
  megabytesPerSecond: (n) => (Number.isFinite(n) ? `${n.toFixed(0)} MB/s` : 'n/a'),
  pagesPerSecond: (n) => (Number.isFinite(n) ? `${Math.round(n).toLocaleString('en-US')} pages/s` : 'n/a'),
  count: (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a'),
  ratio: (n) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : ''),
  fraction: (n) => (Number.isFinite(n) ? n.toFixed(2) : 'n/a'),
};

/**
 * One line of the table. `check(parley, ratio)` decides the verdict when the
 * figure has a target; figures without one are context and have no verdict.
 */
export function row({ figure, parley, floor, unit, target = '', check = null, invalid = null }) {
  const ratio = Number.isFinite(parley) && Number.isFinite(floor) && floor !== 0 ? parley / floor : NaN;
  let verdict = '';
  if (invalid) verdict = `invalid: ${invalid}`;
  else if (check) verdict = Number.isFinite(parley) ? (check(parley, ratio) ? 'meets' : 'misses') : 'no figure';
  return {
    figure,
    parley: format[unit](parley),
    floor: floor === undefined ? '' : format[unit](floor),
    ratio: format.ratio(ratio),
    target,
    verdict,
    values: { parley, floor: floor ?? null, ratio: Number.isFinite(ratio) ? ratio : null },
  };
}

const COLUMNS = [
  ['figure', 'figure', 'left'],
  ['parley', 'Parley', 'right'],
  ['floor', 'floor', 'right'],
  ['ratio', 'ratio', 'right'],
  ['target', 'target', 'left'],
  ['verdict', 'verdict', 'left'],
];

export function textTable(rows) {
  const widths = COLUMNS.map(([key, title]) => Math.max(title.length, ...rows.map((r) => r[key].length)));
  const line = (cells) =>
    cells
      .map((cell, i) => (COLUMNS[i][2] === 'right' ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(COLUMNS.map(([, title]) => title)), line(widths.map((w) => '-'.repeat(w))), ...rows.map((r) => line(COLUMNS.map(([key]) => r[key])))].join('\n');
}

export function markdownTable(rows) {
  const escape = (cell) => cell.replaceAll('|', '\\|');
  const head = `| ${COLUMNS.map(([, title]) => title).join(' | ')} |`;
  const rule = `|${COLUMNS.map(([, , align]) => (align === 'right' ? '---:' : ':---')).join('|')}|`;
  return [head, rule, ...rows.map((r) => `| ${COLUMNS.map(([key]) => escape(r[key])).join(' | ')} |`)].join('\n');
}
