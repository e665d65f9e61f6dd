// Consent (docs/compliance.md#consent): what a lead agreed to, and whether a campaign of a given
// purpose may call on it. A marketing campaign calls only on written consent: its calls are
// telemarketing in an artificial voice (an AI agent's, FCC 24-17, 2024), which 47 CFR
// 64.1200(a)(2)-(3) allows only with the called party's prior express written consent. An inquiry
// (the person called or chatted first) or an existing client's relationship is consent to be
// called about their matter, not that: such leads get informational calls only. An informational
// campaign calls any lead.

export const CONSENT_KINDS = ['written', 'inquiry', 'existing_client'] as const;
export type ConsentKind = (typeof CONSENT_KINDS)[number];

export const CAMPAIGN_PURPOSES = ['marketing', 'informational'] as const;
export type CampaignPurpose = (typeof CAMPAIGN_PURPOSES)[number];

export interface Consent {
  kind: ConsentKind;
  /** What the person agreed to, in words (the form's text, or what the inquiry was). */
  text: string;
  obtained_at: Date;
  /** Where it was obtained: a form, "inbound_call", "chat", … */
  source: string;
  evidence_url?: string;
}

/**
 * Why a campaign did not call a lead for want of consent. `consent_expired` is no longer given (an
 * inquiry no older than the firm's inquiry_consent_days counted for marketing until 2026-12-02):
 * kept so that the decisions and counts recorded before still read.
 */
export type ConsentSkip = 'no_consent' | 'consent_expired' | 'consent_not_for_marketing';

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
}): { skip: ConsentSkip; message: string } | null {
  if (input.purpose === 'informational') return null;
  const consent = input.consent;
  if (consent === null) {
    return {
      skip: 'no_consent',
      message:
        "A marketing call in an AI agent's voice needs the person's prior express written consent (47 CFR 64.1200(a)(2)-(3)); the lead has none.",
    };
  }
  if (consent.kind === 'written') return null;
  return {
    skip: 'consent_not_for_marketing',
    message:
      consent.kind === 'inquiry'
        ? "An inquiry is consent to be called about the person's matter, not the prior express written consent a marketing call in an AI agent's voice needs (47 CFR 64.1200(a)(2)-(3)): informational calls only."
        : "An existing client's consent covers informational calls only, not a marketing campaign (47 CFR 64.1200(a)(2)-(3) asks written consent).",
  };
}
