// Consent (docs/compliance.md#consent): what a lead agreed to, and whether a campaign of a given
// purpose may call on it. A marketing campaign calls only on written consent, or on an inquiry
// (the person called or chatted first) no older than the firm's inquiry_consent_days; an
// informational campaign calls any lead. An existing client's consent is for informational
// calls only: a law firm's marketing to its clients still needs their written consent.

export const CONSENT_KINDS = ['written', 'inquiry', 'existing_client'] as const;
export type ConsentKind = (typeof CONSENT_KINDS)[number];

export const CAMPAIGN_PURPOSES = ['marketing', 'informational'] as const;
export type CampaignPurpose = (typeof CAMPAIGN_PURPOSES)[number];

/** A firm's inquiry consent counts for marketing this many days unless its settings say otherwise. */
export const DEFAULT_INQUIRY_CONSENT_DAYS = 90;

export interface Consent {
  kind: ConsentKind;
  /** What the person agreed to, in words (the form's text, or what the inquiry was). */
  text: string;
  obtained_at: Date;
  /** Where it was obtained: a form, "inbound_call", "chat", … */
  source: string;
  evidence_url?: string;
}

/** Why a campaign did not call a lead for want of consent. */
export type ConsentSkip = 'no_consent' | 'consent_expired' | 'consent_not_for_marketing';

const DAY_MS = 24 * 3600 * 1000;

/** The consent a lead made from an inbound call or a chat carries: an inquiry, at that time. */
export function inquiryConsent(source: 'call' | 'chat', at: Date): Consent {
  return source === 'call'
    ? {
        kind: 'inquiry',
        text: 'The person called the firm about their matter (inbound call).',
        obtained_at: at,
        source: 'inbound_call',
      }
    : {
        kind: 'inquiry',
        text: 'The person wrote to the firm about their matter (chat).',
        obtained_at: at,
        source: 'chat',
      };
}

/** null: the call may go ahead; else why not, and a message for the audit. */
export function judgeConsent(input: {
  purpose: CampaignPurpose;
  consent: Consent | null;
  inquiryDays: number;
  atMs: number;
}): { skip: ConsentSkip; message: string } | null {
  if (input.purpose === 'informational') return null;
  const consent = input.consent;
  if (consent === null) {
    return {
      skip: 'no_consent',
      message: "A marketing call needs the lead's written or inquiry consent; the lead has none.",
    };
  }
  if (consent.kind === 'written') return null;
  if (consent.kind === 'existing_client') {
    return {
      skip: 'consent_not_for_marketing',
      message: "An existing client's consent covers informational calls only, not a marketing campaign.",
    };
  }
  const ageMs = input.atMs - new Date(consent.obtained_at).getTime();
  if (ageMs > input.inquiryDays * DAY_MS) {
    return {
      skip: 'consent_expired',
      message: `The inquiry consent of ${new Date(consent.obtained_at).toISOString()} is older than the firm's ${input.inquiryDays} days.`,
    };
  }
  return null;
}
