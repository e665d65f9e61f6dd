// Starts bench/bare-http-server.ts (a bare node:http server issuing a route's store calls) as a
// child process over a scenario's stores, firm and agent; with BENCH_PROFILE=1 it is profiled
// like the web process, and run with the web's Procfile flags (BENCH_WEB_NODE_ARGS after them).
// It runs through tsx whatever BENCH_RUNTIME says (bench/ is not compiled): the loader only
// changes start-up, not the steady state measured.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { launch } from '../../scripts/local/launcher.js';
import { freePort } from '../../scripts/local/ports.js';
import { atExit, declared, PROFILE_DIR, rand, root, type App, type Web } from './stack.js';
import { rssMiB } from './measure.js';

export async function startBareHttp(
  app: App,
  firm: { slug: string; agentId: string; secret?: string },
): Promise<Web> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const name = `${app.name}-bare-http`;
  const profileDir = join(PROFILE_DIR, `${name}-${Date.now()}-${rand(2)}`);
  const profile = process.env.BENCH_PROFILE === '1' ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  if (profile.length > 0) mkdirSync(profileDir, { recursive: true });
  // The web's Procfile line (its variables and node flags): the same runtime as the web process.
  const runtime = declared('web', 'BENCH_WEB_NODE_ARGS');
  const child = launch({
    name,
    command: process.execPath,
    args: [...runtime.nodeArgs, ...profile, '--import', 'tsx', join(root, 'bench', 'bare-http-server.ts')],
    cwd: root,
    env: {
      ...process.env,
      ...app.env,
      ...runtime.env,
      PORT: String(port),
      BARE_FIRM: firm.slug,
      BARE_AGENT: firm.agentId,
      BARE_SECRET: firm.secret ?? 'none',
    },
    output: { prefix: `[${name}] `, to: 'stderr' },
    ready: {
      probe: () =>
        fetch(`${base}/create`, { method: 'POST', body: '{"toNumber":"+14155550123"}' }).then((r) => r.ok),
    },
  });
  const web: Web = {
    name,
    base,
    pid: child.pid!,
    child: child.child,
    rss: () => rssMiB(child.pid!),
    async stop() {
      await child.stop('SIGTERM', 10_000);
    },
  };
  // Stopped with the scenario's app, or at the bench's exit should the scenario end first: a
  // server left up would run beside every scenario after it (and, unnamed, add its CPU to theirs).
  app.adopt(web);
  atExit(() => web.stop());
  await child.ready;
  return web;
}

/**
 * The environment that loads the bare handlers into the web process itself (bench/bare-in-web.ts),
 * for `app.startWeb(env)`, and where they answer once `setUpBareInWeb` has named the firm.
 */
export async function bareInWebEnv(): Promise<{ env: Record<string, string>; base: string }> {
  const port = await freePort();
  const module = pathToFileURL(join(root, 'bench', 'bare-in-web.ts')).href;
  const inherited = process.env.NODE_OPTIONS ?? '';
  return {
    base: `http://127.0.0.1:${port}`,
    env: {
      BARE_IN_WEB_PORT: String(port),
      NODE_OPTIONS: `${inherited} --import tsx --import="${module}"`.trim(),
    },
  };
}

/**
 * Names the firm, agent and webhook secret to the bare handlers in the web process, and checks
 * that they run in that process (`web`), not in one of their own.
 */
export async function setUpBareInWeb(
  base: string,
  web: { pid: number },
  firm: { slug: string; agentId: string; secret?: string },
): Promise<void> {
  const res = await fetch(`${base}/setup`, {
    method: 'POST',
    body: JSON.stringify({ firm: firm.slug, agent: firm.agentId, secret: firm.secret ?? 'none' }),
  });
  if (res.status !== 200) {
    throw new Error(`the bare handlers in the web process: ${res.status} ${await res.text()}`);
  }
  const { pid } = (await res.json()) as { pid: number };
  if (pid !== web.pid)
    throw new Error(`the bare handlers run in process ${pid}, not in the web (${web.pid})`);
}
