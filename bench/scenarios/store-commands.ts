// What one MongoDB command costs the stores (FerretDB and PostgreSQL CPU), and what a document's
// size and a collection's indexes add to an update: the question behind intake-cost's remaining
// gap (docs/performance.md#what-a-command-costs-the-stores-and-where-a-calls-47-come-from). Point commands by _id, 10 in
// flight, through the driver on a scratch database of the bench's stores:
//   store_update_9kb_vs_300b        an update's CPU, 9 KB documents (a call with its transcript)
//                                   ÷ 300 B documents, one field $set, no secondary index
//   store_update_6_indexes_vs_none  the same update of 3 KB documents on a collection with six
//                                   compound secondary indexes ÷ none
//   store_find_vs_update            a find by _id ÷ an update by _id, 3 KB documents
//   store_insert_vs_update          an insert of a 3 KB document ÷ an update, no index
//   store_conditional_vs_read_write an update by _id whose filter also checks a field (the check
//                                   a read under a lock makes) ÷ that read and a plain update
//   store_find_and_modify_vs_read_write  a findOneAndUpdate by _id returning the document after
//                                   ÷ a find and an update of the same, 3 KB documents
// The documents hold English-like text (words drawn at random), which PostgreSQL compresses as
// it does a transcript. The value is µs of FerretDB + PostgreSQL CPU per command; with an external
// MONGODB_URI (stores not started by the bench) it cannot be read and the rows say so.
import { randomInt } from 'node:crypto';
import type { Collection } from 'mongodb';
import { MongoClient } from 'mongodb';
import { knob, loop, say, stackCpuSeconds } from '../lib/measure.js';
import { ratioRow, type Row } from '../lib/report.js';
import type { Scenario } from '../lib/scenario.js';
import { rand } from '../lib/stack.js';

const OPS = knob('BENCH_STORE_OPS', 1500, 100_000);
const DOCS = 200;
const WORDS =
  'the caller said she was injured at work last march and her employer did not report it so she wants to know whether she can still file a claim and what the deadline is and who pays for the doctor visits while she waits for an answer from the insurance company about her back'.split(
    ' ',
  );

/** About `bytes` of text, words drawn at random. */
function prose(bytes: number): string {
  let out = '';
  while (out.length < bytes) out += `${WORDS[randomInt(WORDS.length)]} `;
  return out.slice(0, bytes);
}

interface Doc {
  _id: string;
  transcript: string;
  status: string;
  n: number;
  firm: string;
  agent: string;
  campaign: string;
  phone: string;
  created_at: Date;
}

const newDoc = (i: number, bytes: number): Doc => ({
  _id: `d${i}`,
  transcript: prose(bytes),
  status: 'registered',
  n: 0,
  firm: `firm-${i % 7}`,
  agent: `agent-${i % 13}`,
  campaign: `campaign-${i % 5}`,
  phone: `+1415${String(5_550_000 + i)}`,
  created_at: new Date(),
});

/** The stores' CPU (FerretDB and PostgreSQL processes under this bench) in seconds; NaN if not ours. */
function storesCpu(): number {
  const used = stackCpuSeconds();
  return used.ferretdb === undefined || used.postgres === undefined ? NaN : used.ferretdb + used.postgres;
}

/** µs of the stores' CPU per command of `op`, OPS of them, 10 in flight. */
async function cpuPerCommand(op: (i: number) => Promise<unknown>): Promise<number> {
  const before = storesCpu();
  await loop(10, OPS, op);
  return ((storesCpu() - before) * 1e6) / OPS;
}

export const storeCommands: Scenario = {
  name: 'store-commands',
  ids: [
    'store_update_9kb_vs_300b',
    'store_update_6_indexes_vs_none',
    'store_find_vs_update',
    'store_insert_vs_update',
    'store_conditional_vs_read_write',
    'store_find_and_modify_vs_read_write',
  ],
  async run(ctx) {
    const client = new MongoClient(ctx.stores.mongodbUri, { serverSelectionTimeoutMS: 5000 });
    const db = client.db(`bench_store_${rand()}`);
    const m = {
      small: [] as number[],
      large: [] as number[],
      plain: [] as number[],
      indexed: [] as number[],
      find: [] as number[],
      insert: [] as number[],
      readWrite: [] as number[],
      conditional: [] as number[],
      findAndModify: [] as number[],
    };
    try {
      const filled = async (name: string, bytes: number, indexes: number): Promise<Collection<Doc>> => {
        const c = db.collection<Doc>(name);
        const keys = ['firm', 'agent', 'campaign', 'phone', 'status', 'n'];
        for (let k = 0; k < indexes; k++) await c.createIndex({ [keys[k]!]: 1, created_at: -1 });
        await c.insertMany(Array.from({ length: DOCS }, (_, i) => newDoc(i, bytes)));
        return c;
      };
      let serial = 0;
      const update = (c: Collection<Doc>) => (i: number) =>
        c.updateOne({ _id: `d${i % DOCS}` }, { $set: { status: `s${serial++}`, n: i } });
      for (let round = 1; round <= ctx.rounds; round++) {
        const small = await filled(`small_${round}`, 300, 0);
        const large = await filled(`large_${round}`, 9000, 0);
        const plain = await filled(`plain_${round}`, 3000, 0);
        const indexed = await filled(`indexed_${round}`, 3000, 6);
        const inserted = db.collection<Doc>(`inserted_${round}`);
        // Alternated within the round, so a busy moment falls on both sides of a ratio.
        m.small.push(await cpuPerCommand(update(small)));
        m.large.push(await cpuPerCommand(update(large)));
        m.plain.push(await cpuPerCommand(update(plain)));
        m.indexed.push(await cpuPerCommand(update(indexed)));
        m.find.push(await cpuPerCommand((i) => plain.findOne({ _id: `d${i % DOCS}` })));
        m.insert.push(await cpuPerCommand((i) => inserted.insertOne(newDoc(DOCS + i, 3000))));
        // The pairs: a read then a write of one document, or the one command that does both.
        m.readWrite.push(
          await cpuPerCommand(async (i) => {
            const doc = await plain.findOne({ _id: `d${i % DOCS}` });
            if (doc !== null)
              await plain.updateOne({ _id: doc._id }, { $set: { status: `s${serial++}`, n: i } });
          }),
        );
        m.conditional.push(
          await cpuPerCommand((i) =>
            plain.updateOne(
              { _id: `d${i % DOCS}`, status: { $ne: 'never' } },
              { $set: { status: `s${serial++}`, n: i } },
            ),
          ),
        );
        m.findAndModify.push(
          await cpuPerCommand((i) =>
            plain.findOneAndUpdate(
              { _id: `d${i % DOCS}` },
              { $set: { status: `s${serial++}`, n: i } },
              { returnDocument: 'after' },
            ),
          ),
        );
        say(
          `store-commands round ${round}: µs of FerretDB + PostgreSQL CPU per command — update 300 B ${m.small.at(-1)!.toFixed(0)}, ` +
            `9 KB ${m.large.at(-1)!.toFixed(0)}, 3 KB ${m.plain.at(-1)!.toFixed(0)}, 3 KB with 6 indexes ${m.indexed.at(-1)!.toFixed(0)}; ` +
            `find 3 KB ${m.find.at(-1)!.toFixed(0)}; insert 3 KB ${m.insert.at(-1)!.toFixed(0)}; ` +
            `find then update ${m.readWrite.at(-1)!.toFixed(0)}, conditional update ${m.conditional.at(-1)!.toFixed(0)}, ` +
            `findOneAndUpdate ${m.findAndModify.at(-1)!.toFixed(0)}`,
        );
      }
    } finally {
      await db.dropDatabase().catch(() => undefined);
      await client.close();
    }
    const rows: Row[] = [
      ratioRow(
        {
          id: 'store_update_9kb_vs_300b',
          label: 'an update by _id, 9 KB documents, µs of the stores’ CPU',
          unit: 'µs',
          baselineLabel: 'the same on 300 B documents',
        },
        m.large,
        m.small,
      ),
      ratioRow(
        {
          id: 'store_update_6_indexes_vs_none',
          label: 'an update by _id, 3 KB documents, six secondary indexes, µs',
          unit: 'µs',
          baselineLabel: 'the same with none',
        },
        m.indexed,
        m.plain,
      ),
      ratioRow(
        {
          id: 'store_find_vs_update',
          label: 'a find by _id, 3 KB documents, µs',
          unit: 'µs',
          baselineLabel: 'an update by _id of the same',
        },
        m.find,
        m.plain,
      ),
      ratioRow(
        {
          id: 'store_insert_vs_update',
          label: 'an insert of a 3 KB document, µs',
          unit: 'µs',
          baselineLabel: 'an update by _id of one',
        },
        m.insert,
        m.plain,
      ),
      ratioRow(
        {
          id: 'store_conditional_vs_read_write',
          label: 'an update by _id whose filter checks a field too, 3 KB documents, µs',
          unit: 'µs',
          baselineLabel: 'a find by _id, then an update by _id',
        },
        m.conditional,
        m.readWrite,
      ),
      ratioRow(
        {
          id: 'store_find_and_modify_vs_read_write',
          label: 'a findOneAndUpdate by _id, the document after returned, 3 KB, µs',
          unit: 'µs',
          baselineLabel: 'a find by _id, then an update by _id',
        },
        m.findAndModify,
        m.readWrite,
      ),
    ];
    return rows;
  },
};
