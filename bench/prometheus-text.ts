/**
 * Reads the origin's /metrics (Prometheus text exposition) in the benchmarks: one reader for the
 * format, summing a metric's samples over the label sets a filter keeps.
 */

/** The sum of `name`'s samples whose labels include every pair of `labels`; NaN when there is none. */
export function metricTotal(text: string, name: string, labels: Readonly<Record<string, string>> = {}): number {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  let total = 0;
  let found = false;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name} `) && !line.startsWith(`${name}{`)) continue;
    const labelText = line.startsWith(`${name}{`) ? line.slice(name.length + 1, line.indexOf('}')) : '';
    if (!wanted.every((pair) => labelText.split(',').includes(pair))) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
    found = true;
  }
  return found ? total : Number.NaN;
}
