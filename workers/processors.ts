import type { QueueProcessor } from './processor.js';

/** Every queue's processor; the worker process runs all of them. */
export const processors: QueueProcessor[] = [];
