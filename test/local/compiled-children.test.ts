// The test run's children (web, worker) run the service compiled once by the global setup, from
// the Procfile's dist/ script, as the platform does (npm start compiles its own copy:
// npm-start-stop.test.ts); a process without a compiled copy (the fault matrix's command) runs
// the TypeScript through tsx.
import { readFile, readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { COMPILED_DIR_ENV, compileCacheDirOf } from '../../scripts/local/compiled.js';
import { nodeArgsOf, procfileLaunch, tsxArgs } from '../../scripts/local/procfile.js';
import { startStack } from '../helpers/stack.js';
import { startWebProcess } from '../helpers/web-process.js';

describe('the children of the test run', () => {
  it('run the compiled copy of the Procfile script, with its flags, and serve from it', async () => {
    const dir = process.env[COMPILED_DIR_ENV];
    expect(dir, 'the global setup names its compiled copy').toBeTruthy();
    const web = procfileLaunch('web');
    expect(nodeArgsOf(web)).toEqual([...web.nodeArgs, `${dir}/api/server.js`]);
    expect(nodeArgsOf(procfileLaunch('worker')).at(-1)).toBe(`${dir}/workers/main.js`);

    const stack = await startStack();
    try {
      const child = await startWebProcess(stack.env);
      try {
        const cmdline = (await readFile(`/proc/${child.child.pid}/cmdline`, 'utf8')).split('\0');
        expect(cmdline).toContain(`${dir}/api/server.js`);
        expect(cmdline).not.toContain('tsx');
        // With V8's code cache of the run, inside its copy.
        const environ = (await readFile(`/proc/${child.child.pid}/environ`, 'utf8')).split('\0');
        expect(environ).toContain(`NODE_COMPILE_CACHE=${compileCacheDirOf(dir!)}`);
        // The compiled process started (its modules read their Lua scripts and the compliance
        // data as they load) and answers as the in-process service does.
        expect((await fetch(`${child.baseUrl}/readyz`)).status).toBe(200);
        const [own, compiled] = await Promise.all(
          [stack.baseUrl, child.baseUrl].map(async (url) => (await fetch(`${url}/openapi.json`)).json()),
        );
        expect(compiled).toEqual(own);
      } finally {
        await child.stop();
      }
      // A child that exited has written its modules' code to the cache (or found them there).
      const cached = await readdir(compileCacheDirOf(dir!), { recursive: true, withFileTypes: true });
      expect(cached.filter((entry) => entry.isFile()).length).toBeGreaterThan(100);
    } finally {
      await stack.stop();
    }
  }, 120_000);

  it('run the TypeScript through tsx where no compiled copy was made', () => {
    const before = process.env[COMPILED_DIR_ENV];
    delete process.env[COMPILED_DIR_ENV];
    try {
      const web = procfileLaunch('web');
      expect(nodeArgsOf(web)).toEqual(tsxArgs(web));
    } finally {
      process.env[COMPILED_DIR_ENV] = before;
    }
  });
});
