// A preload for child processes of tests (`node --import tsx --import ./test/helpers/slow-load.mjs`):
// loading the module whose URL ends with SLOW_LOAD_MODULE is announced on stderr
// ("slow-load: <url>") and then held SLOW_LOAD_MS (default 1500), so a test can act while the
// process is certainly still loading it.
import { register } from 'node:module';

register('./slow-load-hooks.mjs', import.meta.url, {
  data: { suffix: process.env.SLOW_LOAD_MODULE ?? '', ms: Number(process.env.SLOW_LOAD_MS ?? 1500) },
});
