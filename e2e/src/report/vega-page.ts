/**
 * A self-contained HTML report page: sections of prose, tables and Vega-Lite charts, with Vega,
 * Vega-Lite and vega-embed inlined from node_modules (the page works offline and from file://).
 * Used by `trickle e2e` and the experiment report.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export interface ReportTable {
  readonly columns: readonly string[];
  readonly rows: readonly (readonly (string | number | null)[])[];
}

export interface ReportSection {
  readonly heading: string;
  /** Plain-language reading of what follows (HTML-escaped). */
  readonly text?: string | undefined;
  readonly table?: ReportTable | undefined;
  /** A Vega-Lite specification (data inline). */
  readonly chart?: Record<string, unknown> | undefined;
}

export interface ReportPage {
  readonly title: string;
  readonly subtitle?: string | undefined;
  readonly sections: readonly ReportSection[];
}

const require = createRequire(import.meta.url);

async function library(packageName: string, file: string): Promise<string> {
  return readFile(join(dirname(require.resolve(packageName)), file), 'utf8');
}

export function escapeHtml(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');
}

/** JSON inside a <script>: `</script>` and U+2028/9 must not end or break it. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replaceAll('<', '\\u003c')
    .replaceAll('\u2028', '\\u2028')
    .replaceAll('\u2029', '\\u2029');
}

function cell(value: string | number | null): string {
  if (value === null) return '<td class="na">-</td>';
  if (typeof value === 'number') return `<td class="num">${Number.isInteger(value) ? value : value.toFixed(3)}</td>`;
  return `<td>${escapeHtml(value)}</td>`;
}

export async function renderReportPage(page: ReportPage): Promise<string> {
  const [vega, vegaLite, vegaEmbed] = await Promise.all([
    library('vega', 'vega.min.js'),
    library('vega-lite', 'vega-lite.min.js'),
    library('vega-embed', 'vega-embed.min.js'),
  ]);
  const charts: { id: string; spec: Record<string, unknown> }[] = [];
  const body = page.sections
    .map((section, i) => {
      const parts = [`<h2>${escapeHtml(section.heading)}</h2>`];
      if (section.text !== undefined) parts.push(`<p>${escapeHtml(section.text)}</p>`);
      if (section.table !== undefined) {
        const head = section.table.columns.map((c) => `<th>${escapeHtml(c)}</th>`).join('');
        const rows = section.table.rows.map((row) => `<tr>${row.map(cell).join('')}</tr>`).join('\n');
        parts.push(`<table><thead><tr>${head}</tr></thead><tbody>\n${rows}\n</tbody></table>`);
      }
      if (section.chart !== undefined) {
        const id = `chart-${i}`;
        charts.push({ id, spec: section.chart });
        parts.push(`<div class="chart" id="${id}"></div>`);
      }
      return `<section>${parts.join('\n')}</section>`;
    })
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(page.title)}</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 1100px; padding: 0 1rem; color: #1d1d1f; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
th, td { padding: .25rem .7rem; border-bottom: 1px solid #ddd; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.na { color: #999; }
.chart { margin: .5rem 0 1.5rem; }
.subtitle { color: #555; }
</style>
<script>${vega}</script>
<script>${vegaLite}</script>
<script>${vegaEmbed}</script>
</head>
<body>
<h1>${escapeHtml(page.title)}</h1>
${page.subtitle === undefined ? '' : `<p class="subtitle">${escapeHtml(page.subtitle)}</p>`}
${body}
<script>
const charts = ${scriptJson(charts)};
// Resolves (to nothing) once every chart is drawn: tests and screenshots wait for it.
const draw = (c) => vegaEmbed('#' + c.id, c.spec, { actions: false, renderer: 'svg' });
window.chartsRendered = Promise.all(charts.map(draw)).then(() => undefined);
</script>
</body>
</html>
`;
}
