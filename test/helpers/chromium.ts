import { execFile } from 'node:child_process';
import { access } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
];

/** Debian's chromium (playwright cannot download a browser here); installed with apt-get when missing. */
export async function ensureChromium(say: (line: string) => void): Promise<string> {
  try {
    await access(CHROMIUM);
    return CHROMIUM;
  } catch {
    // fall through to install
  }
  if (process.getuid?.() !== 0) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package`);
  say('installing chromium with apt-get ...');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update'], { env, maxBuffer: 64 * 1024 * 1024 });
  await run('apt-get', ['install', '-y', 'chromium'], { env, maxBuffer: 64 * 1024 * 1024 });
  await access(CHROMIUM);
  return CHROMIUM;
}
