// The simulator's record of what it delivered (core/integrations/voice/simulator-engine.ts): a
// step (answered, hung up) sends its events first, then writes the step and its deliveries in one
// write (call_ended and call_analyzed together); when a later event fails, those sent before it
// are still recorded, so the retry sends only what is left; when the first fails, nothing is
// written and the retry takes the step again. The call is played against a real FerretDB (commands counted by the driver's
// own monitoring) and a local HTTP server standing for the firm's webhook.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../core/platform/config.js';
import { advanceSimulatedCall } from '../../core/integrations/voice/simulator-engine.js';
import {
  carriedCall,
  simulatorCalls,
  type SimulatorCallDoc,
} from '../../core/integrations/voice/simulator.js';
import { rand } from '../helpers/stack.js';
import { commandLoggingClient } from '../helpers/command-log.js';

let logging: ReturnType<typeof commandLoggingClient>;
let client: MongoClient;
let server: Server;
let url: string;
/** Events the webhook received, and those it refuses next (503, once each). */
const received: string[] = [];
const refuse = new Set<string>();
/** The collections this file's client sent updates to, in order (from `commandsFrom` on). */
let commandsFrom = 0;
const sent = (command: string) =>
  logging.commands
    .slice(commandsFrom)
    .filter((c) => c.startsWith(`${command} `))
    .map((c) => c.slice(command.length + 1));
const updates = () => sent('update');

beforeAll(async () => {
  logging = commandLoggingClient();
  client = logging.client;
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const event = (JSON.parse(body) as { event: string }).event;
      received.push(event);
      res.statusCode = refuse.delete(event) ? 503 : 200;
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhook`;
});
afterAll(async () => {
  await logging?.drop();
  await new Promise((resolve) => server?.close(resolve));
});

const deps = () => ({ db: client.db(), config: { simCallMs: 200 } as Config });

/** A simulated call that was answered and has just hung up: call_started was delivered. */
async function hungUpCall(): Promise<string> {
  const now = Date.now();
  return insertCall({
    call_status: 'ongoing',
    start_timestamp: now - 1000,
    hangup_at: now - 10,
    delivered: ['call_started'],
  });
}

/** A simulated call just placed: the simulator's first step answers it. */
const placedCall = () =>
  insertCall({ call_status: 'registered', start_timestamp: null, hangup_at: null, delivered: [] });

async function insertCall(
  state: Pick<SimulatorCallDoc, 'call_status' | 'start_timestamp' | 'hangup_at' | 'delivered'>,
): Promise<string> {
  const id = `sim_${rand(6)}`;
  const now = Date.now();
  const doc: SimulatorCallDoc = {
    _id: id,
    agent_id: 'agent_1',
    from_number: '+15550100000',
    to_number: '+14155550123',
    direction: 'outbound',
    call_type: 'phone_call',
    outcome: 'answered',
    metadata: { call_id: `call_${rand(4)}`, firm: 'firm-a', agent_id: 'agent_1' },
    agent: { agent_name: 'Intake', begin_message: 'Hello.', intake_questions: [] },
    webhook: { url, secret: 'whsec_simulator_delivery_records' },
    retell_llm_dynamic_variables: {},
    end_timestamp: null,
    duration_ms: null,
    disconnection_reason: null,
    transcript: null,
    call_analysis: null,
    created_at: new Date(now - 2000),
    ...state,
  };
  await simulatorCalls(client.db()).insertOne(doc);
  return id;
}

const stored = (id: string) => simulatorCalls(client.db()).findOne({ _id: id });
const deliveredOf = async (id: string) => (await stored(id))?.delivered;

describe("the simulator's delivery records", () => {
  it('the hang-up sends call_ended and call_analyzed and records both in one write', async () => {
    const id = await hungUpCall();
    received.length = 0;
    commandsFrom = logging.commands.length;
    expect(await advanceSimulatedCall(deps(), id)).toEqual({ status: 'ended' });
    expect(received).toEqual(['call_ended', 'call_analyzed']);
    // The move to `ended` and both deliveries, one write.
    expect(updates()).toEqual(['simulator_calls']);
    const call = await stored(id);
    expect(call?.call_status).toBe('ended');
    expect(call?.transcript).toEqual(expect.any(String));
    expect(call?.delivered).toEqual(['call_started', 'call_ended', 'call_analyzed']);
  });

  it('the answer sends call_started and writes the move to ongoing with its delivery, in one write', async () => {
    const id = await placedCall();
    received.length = 0;
    commandsFrom = logging.commands.length;
    const step = await advanceSimulatedCall(deps(), id);
    expect(step.status).toBe('ongoing');
    expect(received).toEqual(['call_started']);
    expect(updates()).toEqual(['simulator_calls']);
    const call = await stored(id);
    expect(call?.call_status).toBe('ongoing');
    expect(call?.start_timestamp).toEqual(expect.any(Number));
    expect(call?.delivered).toEqual(['call_started']);
  });

  it('a refused call_started: nothing is written, and the retry answers and sends it once more', async () => {
    const id = await placedCall();
    received.length = 0;
    refuse.add('call_started');
    commandsFrom = logging.commands.length;
    await expect(advanceSimulatedCall(deps(), id)).rejects.toThrow(/answered 503 to call_started/);
    expect(updates()).toEqual([]);
    expect((await stored(id))?.call_status).toBe('registered');
    expect((await advanceSimulatedCall(deps(), id)).status).toBe('ongoing');
    expect(received).toEqual(['call_started', 'call_started']);
    expect(await deliveredOf(id)).toEqual(['call_started']);
  });

  it('a refused call_analyzed: call_ended is recorded sent, and the retry sends only call_analyzed', async () => {
    const id = await hungUpCall();
    received.length = 0;
    refuse.add('call_analyzed');
    await expect(advanceSimulatedCall(deps(), id)).rejects.toThrow(/answered 503 to call_analyzed/);
    // The step is written with what was sent.
    expect((await stored(id))?.call_status).toBe('ended');
    expect(await deliveredOf(id)).toEqual(['call_started', 'call_ended']);
    expect(await advanceSimulatedCall(deps(), id)).toEqual({ status: 'ended' });
    expect(received).toEqual(['call_ended', 'call_analyzed', 'call_analyzed']);
    expect(await deliveredOf(id)).toEqual(['call_started', 'call_ended', 'call_analyzed']);
  });

  it('a call carried from step to step plays through without being read back: two writes, no read', async () => {
    const id = await placedCall();
    const placed = carriedCall((await stored(id))!);
    received.length = 0;
    commandsFrom = logging.commands.length;
    const answered = await advanceSimulatedCall(deps(), id, placed);
    expect(answered.status).toBe('ongoing');
    expect(answered.waitUntil).toEqual(expect.any(Number));
    // The hang-up's step starts from the call as the answer left it (its job carries it).
    const carried = answered.waitUntil === undefined ? undefined : answered.call;
    expect(carried?.call_status).toBe('ongoing');
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, answered.waitUntil! - Date.now() + 5)));
    expect(await advanceSimulatedCall(deps(), id, carried)).toEqual({ status: 'ended' });
    expect(received).toEqual(['call_started', 'call_ended', 'call_analyzed']);
    expect(sent('find')).toEqual([]);
    expect(updates()).toEqual(['simulator_calls', 'simulator_calls']);
    const call = await stored(id);
    expect(call?.call_status).toBe('ended');
    expect(call?.start_timestamp).toBe(carried?.start_timestamp);
    expect(call?.delivered).toEqual(['call_started', 'call_ended', 'call_analyzed']);
  });

  it('a carried call that moved on since: its write matches nothing, the call is read, and what is stored stands', async () => {
    const id = await placedCall();
    const placed = carriedCall((await stored(id))!);
    const first = await advanceSimulatedCall(deps(), id);
    expect(first.status).toBe('ongoing');
    const answered = await stored(id);
    received.length = 0;
    commandsFrom = logging.commands.length;
    // The call as placed, though it was answered since: the step's event may go again (a
    // provider's webhook can arrive twice), its write finds the call moved on and reads it.
    const again = await advanceSimulatedCall(deps(), id, placed);
    expect(again.status).toBe('ongoing');
    expect(again.waitUntil).toBe(answered?.hangup_at);
    expect(sent('find')).toEqual(['simulator_calls']);
    const call = await stored(id);
    expect(call?.start_timestamp).toBe(answered?.start_timestamp);
    expect(call?.hangup_at).toBe(answered?.hangup_at);
    expect(call?.delivered).toEqual(['call_started']);
  });
});
