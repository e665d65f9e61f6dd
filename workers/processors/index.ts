import type { ProcessorTable } from '../runner.js';
import { callEvent, placeCall } from './calls.js';
import { pruneIdempotencyKeys, reapDialSlots } from './maintenance.js';
import { campaignCall, campaignFanout, campaignWake } from './campaigns.js';
import { simulatorStep } from './simulator.js';

/** The processor of every job in jobs/table.ts; the worker process runs those of its queues. */
export const processors: ProcessorTable = {
  placeCall,
  callEvent,
  simulatorStep,
  pruneIdempotencyKeys,
  reapDialSlots,
  campaignFanout,
  campaignCall,
  campaignWake,
};
