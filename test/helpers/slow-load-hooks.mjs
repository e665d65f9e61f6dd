// The module hooks of ./slow-load.mjs (they run on Node's loader thread).
import { writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

let suffix = '';
let ms = 0;

export function initialize(data) {
  suffix = data.suffix;
  ms = data.ms;
}

export async function load(url, context, next) {
  if (suffix !== '' && url.split('?')[0].endsWith(suffix)) {
    writeSync(2, `slow-load: ${url}\n`);
    await sleep(ms);
  }
  return next(url, context);
}
