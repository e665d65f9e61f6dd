import type { ProcessorTable } from '../runner.js';
import { bookingEvent, sendReminder } from './bookings.js';
import { analyzeCall, callEffect, chatEffect, chatEffects } from './call-analysis.js';
import { callEvent, placeCall } from './calls.js';
import {
  copyWebhookKeys,
  pruneClioOAuthStates,
  pruneIdempotencyKeys,
  reapDialSlots,
  rebuildDialAttempts,
  rebuildDncIndex,
  sweepLostCalls,
} from './maintenance.js';
import { campaignCall, campaignFanout, campaignPauseNotice, campaignWake } from './campaigns.js';
import { dncSweep } from './compliance.js';
import { importContacts, sweepContactImports, syncContacts } from './contacts.js';
import { simulatorStep } from './simulator.js';
import { webhookDeliver, webhookFanout, webhookNotice, webhookReplay } from './webhooks.js';
import { workflowCancelRuns, workflowStep, workflowWaitTimeout } from './workflows.js';
import { maintainRingCentralSubscriptions, missedCallback, pruneRingCentralOAuthStates } from './phone.js';

/** The processor of every job in jobs/table.ts; the worker process runs those of its queues. */
export const processors: ProcessorTable = {
  placeCall,
  callEvent,
  analyzeCall,
  callEffect,
  chatEffects,
  chatEffect,
  simulatorStep,
  pruneIdempotencyKeys,
  pruneClioOAuthStates,
  copyWebhookKeys,
  reapDialSlots,
  rebuildDncIndex,
  rebuildDialAttempts,
  sweepLostCalls,
  campaignFanout,
  campaignCall,
  campaignWake,
  campaignPauseNotice,
  dncSweep,
  bookingEvent,
  sendReminder,
  importContacts,
  sweepContactImports,
  syncContacts,
  webhookFanout,
  webhookDeliver,
  webhookReplay,
  webhookNotice,
  workflowStep,
  workflowWaitTimeout,
  workflowCancelRuns,
  missedCallback,
  maintainRingCentralSubscriptions,
  pruneRingCentralOAuthStates,
};
