// The stores alone doing an analysed call's database work: the bound that capacity cannot pass on
// this machine with the commands a call issues today, measured the way bare node:http bounds the
// request paths. The recipe is what a measured round wrote and read, per call: PostgreSQL's rows
// inserted, updated and deleted per collection (FerretDB keeps a document a row) and MongoDB's
// finds. The replay issues the same commands straight from this process to a scratch database of
// the same FerretDB, built with the service's indexes, on clones of the round's own documents (their
// fields and sizes), calls side by side as in the round: no web, no worker, no Redis, no HTTP.
// What it leaves out makes it a bound from above: every command of the round is a point command
// by _id here (the round's few listing reads cost more), and the clones have their final size from
// the first write (a call's early writes are smaller), which makes the replay dearer, not cheaper.
import type { Db, Document } from 'mongodb';
import { ensureIndexes } from '../../core/platform/db/indexes.js';
import { loop } from './measure.js';

/** Per call: rows inserted, updated and deleted in each collection, and point reads in all. */
export interface StoreRecipe {
  collections: { name: string; ins: number; upd: number; del: number }[];
  finds: number;
}

/** Whole operations out of fractional per-call counts, carried from one call to the next. */
class Carry {
  private left = 0;
  constructor(private readonly perCall: number) {}
  take(): number {
    this.left += this.perCall;
    const n = Math.floor(this.left + 1e-9);
    this.left -= n;
    return n;
  }
}

/**
 * Replays `calls` calls of `recipe` with `concurrency` in flight into `scratch` (emptied and
 * indexed first), cloning each collection's documents from `source`. `cpuSeconds` reads the
 * stack's CPU (the stores are all that is busy meanwhile). Returns calls a second and CPU per call.
 */
export async function replayStores(options: {
  source: Db;
  scratch: Db;
  recipe: StoreRecipe;
  calls: number;
  concurrency: number;
  cpuSeconds: () => number;
}): Promise<{ callsPerSecond: number; cpuMsPerCall: number }> {
  const { source, scratch, recipe, calls, concurrency } = options;
  await scratch.dropDatabase();
  await ensureIndexes(scratch);
  const samples = new Map<string, Document>();
  for (const c of recipe.collections) {
    const doc = await source.collection(c.name).findOne({});
    // A collection whose documents are all gone by now (a lease, deleted when it ended).
    samples.set(c.name, doc ?? { token: 'x'.repeat(24), until: new Date() });
  }
  const plans = recipe.collections.map((c) => ({
    name: c.name,
    ins: new Carry(c.ins),
    upd: new Carry(c.upd),
    del: new Carry(c.del),
  }));
  const finds = new Carry(recipe.finds);
  // The counts of every call, drawn before timing (so the carries do not race), and the documents
  // that updates and deletes of collections a call does not insert into find there (a firm, a lead
  // written again), inserted before timing too.
  const work = Array.from({ length: calls }, (_, i) => ({
    i,
    per: plans.map((p) => {
      const [ins, upd, del] = [p.ins.take(), p.upd.take(), p.del.take()];
      // Documents the call's updates and deletes need beyond those it inserts.
      return { name: p.name, ins, upd, del, seeds: Math.max(0, Math.max(upd > 0 ? 1 : 0, del) - ins) };
    }),
    finds: finds.take(),
  }));
  for (const w of work) {
    for (const p of w.per) {
      for (let k = 0; k < p.seeds; k++) {
        await scratch
          .collection(p.name)
          .insertOne({ ...samples.get(p.name)!, _id: seedId(w.i, p.name, k) } as Document);
      }
    }
  }
  const before = options.cpuSeconds();
  const started = performance.now();
  const rate = await loop(concurrency, calls, async (index) => {
    const w = work[index]!;
    const mine: { name: string; id: string }[] = [];
    for (const p of w.per) {
      const ids: string[] = [];
      for (let k = 0; k < p.ins; k++) {
        const id = `replay|${w.i}|${p.name}|${k}`;
        await scratch.collection(p.name).insertOne({ ...samples.get(p.name)!, _id: id } as Document);
        ids.push(id);
      }
      for (let k = 0; k < p.seeds; k++) ids.push(seedId(w.i, p.name, k));
      for (let k = 0; k < p.upd; k++) {
        await scratch
          .collection(p.name)
          .updateOne({ _id: ids[k % ids.length]! } as Document, { $set: { replay_write: k } });
      }
      mine.push(...ids.map((id) => ({ name: p.name, id })));
    }
    for (let k = 0; k < w.finds && mine.length > 0; k++) {
      const at = mine[k % mine.length]!;
      await scratch.collection(at.name).findOne({ _id: at.id } as Document);
    }
    for (const p of w.per) {
      const ids = mine.filter((m) => m.name === p.name);
      for (let k = 0; k < p.del && k < ids.length; k++) {
        await scratch.collection(p.name).deleteOne({ _id: ids[k]!.id } as Document);
      }
    }
  });
  if (rate.failed > 0) throw new Error(`store replay: ${rate.failed} calls failed`);
  const seconds = (performance.now() - started) / 1000;
  const cpu = options.cpuSeconds() - before;
  await scratch.dropDatabase();
  return { callsPerSecond: calls / seconds, cpuMsPerCall: (cpu * 1000) / calls };
}

const seedId = (call: number, name: string, k: number): string => `seed|${call}|${name}|${k}`;
