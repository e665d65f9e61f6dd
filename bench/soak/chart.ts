// The soak's chart: one small line chart per series, drawn by chart.js (its UMD build inlined in
// a local HTML page, so nothing is fetched) in headless Chromium, screenshot to a PNG.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from '../../test/helpers/chromium.js';
import { root } from '../lib/stack.js';

export interface ChartSeries {
  title: string;
  unit: string;
  /** Minutes since the load began, and the value. */
  points: Array<{ x: number; y: number }>;
  /** The verdict's colour: green pass, red fail, grey for information only. */
  state: 'pass' | 'fail' | 'info';
  /** Where the warm-up ends (minutes), drawn as the start of the judged part. */
  warmupMinutes: number;
}

const COLOURS = { pass: '#1a7f37', fail: '#cf222e', info: '#57606a' };

function page(title: string, series: ChartSeries[]): string {
  // The package's exports do not name its UMD build: read from its folder.
  const chartJs = readFileSync(join(root, 'node_modules', 'chart.js', 'dist', 'chart.umd.js'), 'utf8');
  // JSON inside a <script>: "<" escaped so no value can close the element.
  const data = JSON.stringify(series).replace(/</g, '\\u003c');
  const heading = title.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html><html><head><meta charset="utf-8"><style>
body{font:13px sans-serif;margin:12px;background:#fff}h1{font-size:16px;margin:0 0 8px}
.grid{display:grid;grid-template-columns:repeat(3,440px);gap:10px}.cell{height:230px}
</style><script>${chartJs}</script></head><body><h1>${heading}</h1><div class="grid" id="grid"></div><script>
const series = ${data};
const colours = ${JSON.stringify(COLOURS)};
for (const s of series) {
  const cell = document.createElement('div'); cell.className = 'cell';
  const canvas = document.createElement('canvas'); cell.appendChild(canvas);
  document.getElementById('grid').appendChild(cell);
  const ys = s.points.map(p => p.y).filter(Number.isFinite);
  new Chart(canvas, {
    type: 'line',
    data: { datasets: [
      { label: s.title + ' (' + s.unit + ')', data: s.points, borderColor: colours[s.state], pointRadius: 1.5, borderWidth: 1.5 },
      { label: 'end of warm-up', data: [{x: s.warmupMinutes, y: Math.min(...ys)}, {x: s.warmupMinutes, y: Math.max(...ys)}],
        borderColor: '#999', borderDash: [4, 4], pointRadius: 0, borderWidth: 1 },
    ] },
    options: { animation: false, responsive: true, maintainAspectRatio: false,
      plugins: { title: { display: true, text: s.title + ' — ' + s.state.toUpperCase() }, legend: { display: false } },
      scales: { x: { type: 'linear', title: { display: true, text: 'minutes' } }, y: { title: { display: true, text: s.unit } } } },
  });
}
document.body.dataset.ready = '1';
</script></body></html>`;
}

/** Writes `html` (for a look in a browser) and `png` (the screenshot). */
export async function renderChart(
  title: string,
  series: ChartSeries[],
  out: { html: string; png: string },
): Promise<void> {
  const html = page(title, series);
  writeFileSync(out.html, html);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  try {
    const rows = Math.ceil(series.length / 3);
    const p = await browser.newPage({ viewport: { width: 1370, height: 60 + rows * 240 } });
    await p.setContent(html);
    await p.waitForSelector('body[data-ready="1"]');
    await p.screenshot({ path: out.png, fullPage: true });
  } finally {
    await browser.close();
  }
}
