import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';

// The widget's files, read once when the process starts (a missing file stops it there, not on
// a request). `npm run build` copies them beside the compiled code, so dist/ finds them too.
// Each file is served at /widget/<name>; its version (a hash of its content) goes into the
// page's URLs as ?v=, and a request naming the current version may be cached for a year.

const TYPES = new Map<string, string>([
  ['widget.js', 'application/javascript; charset=utf-8'],
  ['widget.css', 'text/css; charset=utf-8'],
  ['test-widget.js', 'application/javascript; charset=utf-8'],
  ['test-widget.css', 'text/css; charset=utf-8'],
]);

export const WIDGET_ASSET_NAMES = [...TYPES.keys()];

export interface WidgetAsset {
  body: Buffer;
  contentType: string;
  /** The first 16 hex digits of the content's SHA-256. */
  version: string;
}

function read(name: string): Buffer {
  const path = fileURLToPath(new URL(`./${name}`, import.meta.url));
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(`The widget file ${path} is missing (npm run build copies dashboard/widget/ files)`, {
      cause: err,
    });
  }
}

const assets = new Map<string, WidgetAsset>(
  [...TYPES].map(([name, contentType]) => {
    const body = read(name);
    const version = createHash('sha256').update(body).digest('hex').slice(0, 16);
    return [name, { body, contentType, version }];
  }),
);

/** The page template, test-widget.html. */
export const TEST_WIDGET_TEMPLATE = read('test-widget.html').toString('utf8');

/** A widget file by name; undefined for any other name (a Map: "__proto__" finds nothing). */
export function widgetAsset(name: string): WidgetAsset | undefined {
  return assets.get(name);
}

/** The path a page uses for a widget file: versioned, so it may be cached for good. */
export function widgetAssetPath(name: string): string {
  const asset = assets.get(name);
  if (asset === undefined) throw new Error(`No widget file ${name}`);
  return `/widget/${name}?v=${asset.version}`;
}
