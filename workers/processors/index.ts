import type { QueueProcessor } from '../processor.js';
import { callEventsProcessor } from './call-events.js';
import { placeCallProcessor } from './calls.js';
import { maintenanceProcessor } from './maintenance.js';
import { simulatorProcessor } from './simulator.js';

/** Every queue's processor; the worker process runs all of them. */
export const processors: QueueProcessor[] = [
  placeCallProcessor,
  callEventsProcessor,
  simulatorProcessor,
  maintenanceProcessor,
];
