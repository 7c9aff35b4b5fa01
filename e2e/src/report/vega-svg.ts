/**
 * A Vega-Lite chart as a standalone SVG, rendered in Node by Vega itself (no browser): for the
 * charts a README or a results file shows as a picture.
 */
import { parse, View } from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';

export async function renderVegaLiteSvg(spec: Record<string, unknown>): Promise<string> {
  const view = new View(parse(compile(spec as unknown as TopLevelSpec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
