import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';

// The widget's files, read once when the process starts (a missing file stops it there, not on
// a request). `npm run build` copies them beside the compiled code, so dist/ finds them too.
// Each file is served at /widget/v/<version>/<name> (its version: a hash of the bytes served),
// cached for good, with its SRI hash computed from those same bytes; /widget/<name> serves the
// current version under a short cache for whoever wants the latest without pinning it.
// widget.css is not served on its own: its text goes into widget.js, which adopts it as a
// constructed stylesheet in its shadow root, so a host page's CSP needs no style-src for it.

const TYPES = new Map<string, string>([
  ['widget.js', 'application/javascript; charset=utf-8'],
  ['test-widget.js', 'application/javascript; charset=utf-8'],
  ['test-widget.css', 'text/css; charset=utf-8'],
]);

/** Where widget.js receives widget.css's text (a JSON string literal replaces the marker). */
const CSS_MARKER = "/*@widget.css*/ ''";

export const WIDGET_ASSET_NAMES = [...TYPES.keys()];

export interface WidgetAsset {
  body: Buffer;
  contentType: string;
  /** The first 16 hex digits of the served bytes' SHA-256. */
  version: string;
  /** The Subresource Integrity value of the served bytes: `sha384-<base64>`. */
  integrity: string;
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

/** The bytes served for `name`: the file, with widget.css's text put into widget.js. */
function served(name: string): Buffer {
  const body = read(name);
  if (name !== 'widget.js') return body;
  const source = body.toString('utf8');
  if (source.split(CSS_MARKER).length !== 2) throw new Error(`widget.js must hold ${CSS_MARKER} once`);
  const css = JSON.stringify(read('widget.css').toString('utf8'));
  return Buffer.from(
    source.replace(CSS_MARKER, () => css),
    'utf8',
  );
}

const assets = new Map<string, WidgetAsset>(
  [...TYPES].map(([name, contentType]) => {
    const body = served(name);
    const version = createHash('sha256').update(body).digest('hex').slice(0, 16);
    const integrity = `sha384-${createHash('sha384').update(body).digest('base64')}`;
    return [name, { body, contentType, version, integrity }];
  }),
);

/** The page template, test-widget.html. */
export const TEST_WIDGET_TEMPLATE = read('test-widget.html').toString('utf8');

/** A widget file by name; undefined for any other name (a Map: "__proto__" finds nothing). */
export function widgetAsset(name: string): WidgetAsset | undefined {
  return assets.get(name);
}

function requireAsset(name: string): WidgetAsset {
  const asset = assets.get(name);
  if (asset === undefined) throw new Error(`No widget file ${name}`);
  return asset;
}

/** The path of a widget file's current version: immutable, so it may be cached for good. */
export function widgetAssetPath(name: string): string {
  return `/widget/v/${requireAsset(name).version}/${name}`;
}

/** The SRI value (`sha384-…`) of a widget file's current version. */
export function widgetAssetIntegrity(name: string): string {
  return requireAsset(name).integrity;
}
