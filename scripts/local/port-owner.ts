// Whether a listening port is held by a given process (or one of its descendants), read from
// Linux's /proc. A readiness check that only asks "does the port answer" is fooled when the child
// lost the race for a port chosen just before it started (freePort) and another server on the
// machine holds it: the probe passes, the child exits with EADDRINUSE, and the caller talks to a
// stranger (a test's second web process once answered with another test's stack: 401 for every
// key). Where /proc cannot tell (another system, another user's process), the answer is yes.
import { readdir, readFile, readlink } from 'node:fs/promises';

/** The inodes of the sockets listening on `port` (any address), or null when /proc cannot say. */
async function listeningInodes(port: number): Promise<Set<string> | null> {
  const tables = await Promise.all(
    ['/proc/net/tcp', '/proc/net/tcp6'].map((file) => readFile(file, 'utf8').catch(() => null)),
  );
  if (tables.every((t) => t === null)) return null;
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const table of tables) {
    for (const line of (table ?? '').split('\n').slice(1)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10) continue;
      const [, local, , state] = fields;
      if (state === '0A' && local!.endsWith(`:${hexPort}`)) inodes.add(fields[9]!);
    }
  }
  return inodes;
}

/** The process and all its descendants (through /proc/<pid>/task/<tid>/children). */
async function processTree(pid: number): Promise<number[]> {
  const all = [pid];
  for (let i = 0; i < all.length; i++) {
    const tasks = await readdir(`/proc/${all[i]}/task`).catch(() => [] as string[]);
    for (const task of tasks) {
      const children = await readFile(`/proc/${all[i]}/task/${task}/children`, 'utf8').catch(() => '');
      for (const child of children.trim().split(/\s+/)) if (child !== '') all.push(Number(child));
    }
  }
  return all;
}

/**
 * Whether the socket listening on `port` belongs to `pid` or a descendant: false when another
 * process holds it (or nothing listens); true when /proc cannot tell.
 */
export async function portHeldBy(port: number, pid: number): Promise<boolean> {
  const inodes = await listeningInodes(port);
  if (inodes === null) return true;
  if (inodes.size === 0) return false;
  let unreadable = false;
  for (const member of await processTree(pid)) {
    let fds: string[];
    try {
      fds = await readdir(`/proc/${member}/fd`);
    } catch (err) {
      // Gone meanwhile: it holds nothing. Not ours to read: we cannot tell.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') unreadable = true;
      continue;
    }
    for (const fd of fds) {
      const target = await readlink(`/proc/${member}/fd/${fd}`).catch(() => '');
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode !== undefined && inodes.has(inode)) return true;
    }
  }
  return unreadable;
}
