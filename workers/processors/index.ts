import type { ProcessorTable } from '../runner.js';
import { callEvent, placeCall } from './calls.js';
import { importContacts, sweepContactImports } from './contacts.js';
import { pruneIdempotencyKeys } from './maintenance.js';
import { simulatorStep } from './simulator.js';

/** The processor of every job in jobs/table.ts; the worker process runs those of its queues. */
export const processors: ProcessorTable = {
  placeCall,
  callEvent,
  simulatorStep,
  pruneIdempotencyKeys,
  importContacts,
  sweepContactImports,
};
