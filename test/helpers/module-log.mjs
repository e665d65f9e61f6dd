// Preloaded with `--import` (NODE_OPTIONS) into a child process: writes the URL of every module
// the process resolves through the ESM loader to the file named by MODULE_LOG, one a line.
import { register } from 'node:module';

register('./module-log-hooks.mjs', import.meta.url, { data: { file: process.env.MODULE_LOG } });
