import type { LeadFields } from '../leads/leads.js';
import { singleLine } from '../../platform/text.js';
import type { Urgency } from './case-type.js';

// What an intake (a call or a chat) tells about the person: the fields a lead, a CRM contact and
// a notification need. The call_analyzed pipeline extracts it once and stores it on the call;
// end-chat stores it as part of the chat's analysis (IntakeAnalysis has the same fields).

export interface CallerData {
  first_name: string | null;
  last_name: string | null;
  /** E.164. */
  phone: string | null;
  /** Trimmed and lower-cased. */
  email: string | null;
  case_type: string | null;
  /** One short paragraph for a person reading the lead. */
  summary: string;
  urgency: Urgency;
}

/**
 * Caller data as it may be stored and shown: every text field one line (a name, a case type, the
 * one-paragraph summary), so what a caller said or a provider wrote cannot forge lines in the
 * firm's mail or Slack message (docs/webhooks.md#caller-text).
 */
export function singleLineCallerData<T extends CallerData>(data: T): T {
  const line = (value: string | null) => (value === null ? null : singleLine(value).trim() || null);
  return {
    ...data,
    first_name: line(data.first_name),
    last_name: line(data.last_name),
    phone: line(data.phone),
    email: line(data.email),
    case_type: line(data.case_type),
    summary: singleLine(data.summary).trim(),
  };
}

/** A phone or an email: someone at the firm can get back to the person. */
export const hasContact = (data: Pick<CallerData, 'phone' | 'email'>): boolean =>
  data.phone !== null || data.email !== null;

/** The person's name as one string, or null when none was given. */
export function displayName(data: Pick<CallerData, 'first_name' | 'last_name'>): string | null {
  const name = [data.first_name, data.last_name].filter((p) => p !== null && p !== '').join(' ');
  return name === '' ? null : name;
}

/** The lead fields (leads.ts ensureSubjectLead) of an intake's caller data. */
export function leadFieldsFrom(data: CallerData): LeadFields {
  return {
    first_name: data.first_name,
    last_name: data.last_name,
    phone: data.phone,
    email: data.email,
    case_type: data.case_type,
    summary: data.summary,
    urgency: data.urgency,
  };
}
