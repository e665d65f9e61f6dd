import type { Static } from '@sinclair/typebox';
import type { LeadDoc } from '../../../core/domain/leads/leads.js';
import { leadView as publicLead } from '../../../core/domain/leads/lead-view.js';
import type { LeadRecord } from './schema.js';

/** The lead as the API shows it (the shape lead.* events carry too). */
export const leadView: (lead: LeadDoc) => Static<typeof LeadRecord> = publicLead;
