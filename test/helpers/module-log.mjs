// Preloaded with `--import` (NODE_OPTIONS) into a child process: writes the URL of every module
// the process resolves to the file named by MODULE_LOG, one a line. Synchronous hooks
// (module.registerHooks), so a package's own `require`s are listed as well as `import`s.
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const file = process.env.MODULE_LOG;

registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    appendFileSync(file, `${resolved.url}\n`);
    return resolved;
  },
});
