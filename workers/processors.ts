import type { QueueProcessor } from './processor.js';
import { callEventsProcessor } from './processors/call-events.js';
import { placeCallProcessor } from './processors/calls.js';
import { maintenanceProcessor } from './processors/maintenance.js';
import { simulatorProcessor } from './processors/simulator.js';

/** Every queue's processor; the worker process runs all of them. */
export const processors: QueueProcessor[] = [
  placeCallProcessor,
  callEventsProcessor,
  simulatorProcessor,
  maintenanceProcessor,
];
