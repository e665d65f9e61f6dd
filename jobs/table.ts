import { bookingJobs } from './bookings.js';
import { callAnalysisJobs } from './call-analysis.js';
import { callJobs } from './calls.js';
import { campaignJobs } from './campaigns.js';
import { complianceJobs } from './compliance.js';
import { contactJobs } from './contacts.js';
import { maintenanceJobs } from './maintenance.js';
import { phoneJobs } from './phone.js';
import { simulatorJobs } from './simulator.js';
import { webhookJobs } from './webhooks.js';
import { workflowJobs } from './workflows.js';

/**
 * Every job, declared once: queue, name, payload type, id and options. Producers add jobs
 * through these definitions (jobs/define.ts `enqueue`); the worker process must have a processor
 * for each (workers/processors/index.ts is typed against this table).
 */
export const JOBS = {
  ...callJobs,
  ...callAnalysisJobs,
  ...simulatorJobs,
  ...maintenanceJobs,
  ...campaignJobs,
  ...complianceJobs,
  ...bookingJobs,
  ...contactJobs,
  ...webhookJobs,
  ...workflowJobs,
  ...phoneJobs,
};

export type JobKey = keyof typeof JOBS;
