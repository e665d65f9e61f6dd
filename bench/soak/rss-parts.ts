// A process's resident memory by what holds it, from /proc/<pid>/smaps (Linux): when RSS climbs
// while the heap after collection stays flat, this says which allocator holds the growth.
//   code    anonymous executable mappings: V8's code range (JIT code, regular-expression code)
//   v8      anonymous mappings V8 placed itself (its heap's pages: V8 maps them at random hints,
//           far below the addresses the kernel hands out near the shared libraries)
//   malloc  the brk heap (glibc's main arena) and the other anonymous mappings the kernel placed
//           (glibc's other arenas, its large allocations, thread stacks)
//   file    file-backed mappings (the node binary, shared libraries, ICU data)
// Node is built without pointer compression, so V8's pages are not inside one reserved cage:
// the split by address is what tells them from glibc's. The parts add up to VmRSS. The v8 part
// runs above heapTotal (105 against 77-90 MB in the web in the soak of 2026-12-01): it also
// holds the pages V8 pools after a collection and what else V8 maps outside its heap.
import { readFileSync } from 'node:fs';

export interface RssParts {
  code: number;
  v8: number;
  malloc: number;
  file: number;
  other: number;
}

/** Below this, an anonymous mapping was placed by V8's random hints, not by the kernel's mmap base. */
const KERNEL_MMAP_AREA = 0x7e00_0000_0000;

const HEADER = /^([0-9a-f]+)-[0-9a-f]+ (\S{4}) \S+ \S+ \S+\s*(.*)$/;

/** Which part a mapping's resident pages count in, from its smaps header line. */
export function partOf(start: number, perms: string, name: string): keyof RssParts {
  if (name.startsWith('/')) return 'file';
  if (name === '[heap]') return 'malloc';
  if (name !== '') return 'other'; // [stack], [vdso], [vvar], [anon:...]
  if (perms.includes('x')) return 'code';
  return start < KERNEL_MMAP_AREA ? 'v8' : 'malloc';
}

/** Parses smaps text into resident MiB per part. */
export function rssPartsOf(smaps: string): RssParts {
  const kib: RssParts = { code: 0, v8: 0, malloc: 0, file: 0, other: 0 };
  let part: keyof RssParts = 'other';
  for (const line of smaps.split('\n')) {
    const header = HEADER.exec(line);
    if (header !== null) {
      part = partOf(Number.parseInt(header[1]!, 16), header[2]!, header[3]!.trim());
    } else if (line.startsWith('Rss:')) {
      kib[part] += Number(/(\d+)/.exec(line)?.[1] ?? 0);
    }
  }
  const mib = (n: number) => n / 1024;
  return {
    code: mib(kib.code),
    v8: mib(kib.v8),
    malloc: mib(kib.malloc),
    file: mib(kib.file),
    other: mib(kib.other),
  };
}

/** The process's resident MiB per part; NaN in each once it has exited. */
export function rssParts(pid: number): RssParts {
  try {
    return rssPartsOf(readFileSync(`/proc/${pid}/smaps`, 'utf8'));
  } catch {
    return { code: NaN, v8: NaN, malloc: NaN, file: NaN, other: NaN };
  }
}
