// Stored calls as they look after they ended and were analysed, for benches that need a big
// calls collection (seeded with the driver, in batches).
import { randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import type { AgentDoc } from '../../core/domain/agents/agents.js';
import type { FirmDoc } from '../../core/domain/firms/firms.js';
import type { Frozen } from '../../core/platform/db/read-cache.js';
import {
  callsCollection,
  newOutboundCall,
  STATUS_RANK,
  type CallDoc,
} from '../../core/domain/calls/calls.js';
import { checkInterrupted } from './measure.js';

const WORDS =
  'the caller said that she was injured at work last march when a pallet fell from a forklift and her employer did not report it her doctor wants surgery and she has missed six weeks of pay'.split(
    ' ',
  );

/** A transcript of about `bytes` characters, random words (so it does not compress away). */
export function transcript(bytes: number): string {
  const lines: string[] = [];
  let size = 0;
  while (size < bytes) {
    const n = 6 + Math.floor(Math.random() * 14);
    const line = `${lines.length % 2 === 0 ? 'Agent' : 'User'}: ${Array.from({ length: n }, () => WORDS[Math.floor(Math.random() * WORDS.length)]).join(' ')}.`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n');
}

/** A call as it looks after it ended and was analysed (the i-th of a seed, 1 s apart). */
export function endedCall(
  firm: FirmDoc,
  agent: Frozen<AgentDoc>,
  i: number,
  transcriptBytes = 3000,
): CallDoc {
  const call = newOutboundCall(
    {
      firm,
      agent,
      toNumber: `+1415555${String(i % 10_000).padStart(4, '0')}`,
      dynamicVariables: { first_name: `Seed ${i}` },
    },
    'simulator',
  );
  const start = Date.now() - 86_400_000 + i * 1000;
  return {
    ...call,
    status: 'ended',
    status_rank: STATUS_RANK.ended,
    finished: true,
    provider_call_id: `sim_${randomBytes(8).toString('hex')}`,
    start_timestamp: start,
    end_timestamp: start + 120_000,
    duration_ms: 120_000,
    disconnection_reason: 'user_hangup',
    transcript: transcript(transcriptBytes),
    call_analysis: {
      call_summary: 'Workplace injury, employer did not report it; wants a consultation.',
      user_sentiment: 'Neutral',
      call_successful: true,
      custom_analysis_data: { case_type: 'workers comp' },
    },
    dial: {
      state: 'done',
      attempts: 1,
      started_at: new Date(),
      finished_at: new Date(),
      last_error: null,
      result: { provider_call_id: 'sim_seeded' },
    },
  };
}

/** Inserts `count` ended calls of the firm, 1,000 per insertMany. */
export async function seedEndedCalls(
  db: Db,
  firm: FirmDoc,
  agent: Frozen<AgentDoc>,
  count: number,
  transcriptBytes = 3000,
  from = 0,
): Promise<void> {
  const calls = callsCollection(db);
  for (let done = 0; done < count;) {
    checkInterrupted();
    const n = Math.min(1000, count - done);
    await calls.insertMany(
      Array.from({ length: n }, (_, k) => endedCall(firm, agent, from + done + k, transcriptBytes)),
      { ordered: false },
    );
    done += n;
  }
}
