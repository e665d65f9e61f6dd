// Consent (docs/compliance.md#consent): what a lead agreed to, and whether a campaign of a given
// purpose may call on it. An AI agent's voice is an artificial voice (FCC 24-17, 2024). A marketing
// campaign calls only on written consent: 47 CFR 64.1200(a)(2)-(3) allows telemarketing in an
// artificial voice only with the called party's prior express written consent. An informational
// campaign calls on any consent (written, an inquiry, an existing client): an artificial-voice call
// to a mobile number needs the called party's prior express consent whatever its purpose (47
// U.S.C. 227(b)(1)(A)(iii), 64.1200(a)(1)(iii)), and a +1 number does not tell whether it is one.
// A deployment that dials no one (INFORMATIONAL_CONSENT=false) lets informational campaigns call
// leads without consent.

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
  /** INFORMATIONAL_CONSENT: an informational call needs consent of some kind (the default). */
  informationalNeedsConsent: boolean;
}): { skip: ConsentSkip; message: string } | null {
  const consent = input.consent;
  if (input.purpose === 'informational') {
    if (consent !== null || !input.informationalNeedsConsent) return null;
    return {
      skip: 'no_consent',
      message:
        "A call in an AI agent's voice to a number that may be a mobile one needs the person's prior express consent, whatever its purpose (47 U.S.C. 227(b)(1)(A)(iii), 47 CFR 64.1200(a)(1)(iii)); the lead has none.",
    };
  }
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
