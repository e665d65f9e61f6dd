// What a chat turn costs the web as the chat grows (docs/widget.md#limits): one chat of
// BENCH_CHAT_TURNS (default 80, at most the chat's 100) hostile 4,000-character messages, the
// costliest text the contact patterns read. Printed per end of the chat: the median CPU of the
// web process (this process: the web runs in it, no workers) and wall time over six turns, and
// their ratio, last to first. The baseline is the same run's first turns (after a warm-up chat).
// A turn reads only its new message, so the web's CPU per turn stays flat (0.78 on 2026-12-01);
// what grows is the chat document the store reads and rewrites each turn (about 330 kB at turn
// 80), which is the wall time's ratio (4.45 then). Replaying the history through the patterns, the
// bug this guards, grew tens of times: the "replayed" column is the CPU of replaying the chat's
// user messages through the built-in agent, in this process, at each end (21.7 then).
//   npx tsx bench/chat-turn-cost.ts   (BENCH_CHAT_TURNS=80)
// Not part of `npm test` (test/hardening/chat-length-limit.test.ts holds what a turn reads).
// Starts its own Redis and FerretDB (the local ones), removes everything.
import type { IntakeQuestion } from '../core/domain/agents/agents.js';
import { intakeReply } from '../core/domain/intake/intake-agent.js';
import { MAX_CHAT_MESSAGES } from '../core/domain/chats/chat-limits.js';
import { ApiClient } from '../test/helpers/client.js';
import { startInProcessApp } from './lib/in-process.js';
import { knob, loadAverage, median, say } from './lib/measure.js';
import { deadline, rand, runScript, startStores } from './lib/stack.js';

const TURNS = knob('BENCH_CHAT_TURNS', 80, MAX_CHAT_MESSAGES);
const ENDS = 6;
const HOSTILE = ['a'.repeat(4000), 'a@'.repeat(2000), '12 '.repeat(1333)];
const hostile = (i: number): string => `${HOSTILE[i % HOSTILE.length]!.slice(0, 3990)} ${rand(2)}`;

const cpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/** What the bench reads of the answers it gets. */
interface Answer {
  key: string;
  agent_id: string;
  chat_id: string;
  intake_questions: IntakeQuestion[];
}

async function ok(res: Promise<{ status: number; body: unknown }>, what: string): Promise<Answer> {
  const r = await res;
  if (r.status !== 200) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body as Answer;
}

async function main(): Promise<void> {
  deadline(20 * 60_000);
  if (TURNS < 2 * ENDS) throw new Error(`BENCH_CHAT_TURNS must be at least ${2 * ENDS}`);
  const stores = await startStores();
  const app = await startInProcessApp(stores, 'chat-turn-cost');
  const slug = `bench-${rand()}`;
  await ok(app.admin.post('/api/firms', { slug, name: `Firm ${slug}` }), 'firm');
  const key = await ok(app.admin.post('/api/auth/api-keys', { firmSlug: slug, name: 'bench' }), 'key');
  const client = new ApiClient(app.base).withToken(key.key);
  const agent = await ok(
    client.post('/api/v2/create-agent', { firmSlug: slug, agent_name: 'Bench', voice_id: 'sim-en-us-ava' }),
    'agent',
  );
  const chat = await ok(
    client.post('/api/v2/create-chat', { firmSlug: slug, agentId: agent.agent_id }),
    'chat',
  );
  // A chat of its own first warms the code up, so the first measured turns are not its compilation.
  const warm = await ok(
    client.post('/api/v2/create-chat', { firmSlug: slug, agentId: agent.agent_id }),
    'chat',
  );
  for (let i = 0; i < 2 * ENDS; i++) {
    await ok(
      client.post('/api/v2/chat-completion', { chatId: warm.chat_id, message: hostile(i) }),
      'warm-up',
    );
  }
  say(`${TURNS} hostile turns on one chat (load ${loadAverage()})`);

  const sent: string[] = [];
  const cpu: number[] = [];
  const wall: number[] = [];
  const replayed: number[] = [];
  for (let i = 0; i < TURNS; i++) {
    const message = hostile(i);
    if (i < ENDS || i >= TURNS - ENDS) {
      // What the turn would cost the web had it replayed the history (the fixed bug), measured alone.
      const before = cpuMs();
      intakeReply(agent.intake_questions, sent, message);
      replayed.push(cpuMs() - before);
    }
    const cpuBefore = cpuMs();
    const started = performance.now();
    await ok(client.post('/api/v2/chat-completion', { chatId: chat.chat_id, message }), `turn ${i + 1}`);
    wall.push(performance.now() - started);
    cpu.push(cpuMs() - cpuBefore);
    sent.push(message);
  }
  const row = (which: string, part: (xs: number[]) => number[]) => ({
    turns: which,
    'cpu ms (median)': Number(median(part(cpu)).toFixed(1)),
    'wall ms (median)': Number(median(part(wall)).toFixed(1)),
    'replayed cpu ms (median)': Number(median(part(replayed)).toFixed(1)),
  });
  const first = row(`1-${ENDS}`, (xs) => xs.slice(0, ENDS));
  const last = row(`${TURNS - ENDS + 1}-${TURNS}`, (xs) => xs.slice(-ENDS));
  console.table([first, last]);
  const ratio = (k: keyof typeof first) => (Number(last[k]) / Number(first[k])).toFixed(2);
  console.log(
    JSON.stringify({
      turn_cpu_last_vs_first: Number(ratio('cpu ms (median)')),
      turn_wall_last_vs_first: Number(ratio('wall ms (median)')),
      replay_cpu_last_vs_first: Number(ratio('replayed cpu ms (median)')),
      load: loadAverage(),
    }),
  );
}

runScript(main);
