import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { claim } from '../../platform/db/claim.js';
import type { ZoneCheck } from './calling-hours.js';

// The dial gate's audit (docs/compliance.md#audit): one record per decision, written before
// the dial request goes to the provider. Its _id derives from the call and the stage, so a
// retried job writes its decision once (a claim by insert) and later runs read it back:
//   `<call_id>:request`, `<call_id>:dial`       allow or block (once per call and stage)
//   `<call_id>:dial:block`                      a block after the dial's allow: a retried job
//                                               whose allowed dial failed, the number since put
//                                               on the do-not-call list (or another rule)
//   `<call_id>:<stage>:defer:<until ms>`        a deferral (one per distinct instant)
// The dial attempts are exactly the records with stage `dial` and answer `allow`.

export type DialStage = 'request' | 'dial';
export type DialAnswer = 'allow' | 'defer' | 'block';

export interface DialDecisionDoc {
  _id: string;
  firm: string;
  phone: string;
  call_id: string;
  campaign_id: string | null;
  stage: DialStage;
  answer: DialAnswer;
  /** Why: `hours` or `frequency` for a deferral; `dnc`, `country`, `consent`, `hours`, … for a block; null when allowed. */
  reason: string | null;
  message: string | null;
  retry_at: Date | null;
  rules_version: string;
  region: string | null;
  limited_by: string[];
  zones: ZoneCheck[];
  /** Attempts in the rolling 24 h when decided (at the dial stage, this one included when allowed). */
  attempts: number | null;
  attempts_cap: number;
  /**
   * The consent the decision judged (a campaign's call: its purpose and the lead's consent);
   * null when no consent rule applied (a direct call, the dial stage).
   */
  consent: DecisionConsent | null;
  at: Date;
}

export interface DecisionConsent {
  purpose: 'marketing' | 'informational';
  /** The lead's consent kind; null: it had none. */
  kind: string | null;
  obtained_at: Date | null;
  /** Why it did not suffice (`no_consent`, `consent_expired`, `consent_not_for_marketing`); null: it did. */
  skip: string | null;
}

export const dialDecisionsCollection = (db: Db) => collection<DialDecisionDoc>(db, COLLECTIONS.dialDecisions);

export function decisionId(
  callId: string,
  stage: DialStage,
  answer: DialAnswer,
  until?: number | null,
): string {
  return answer === 'defer' ? `${callId}:${stage}:defer:${until ?? 'none'}` : `${callId}:${stage}`;
}

/** The id of a block at the dial stage that came after that stage's allow (a retried job). */
export const blockAfterAllowId = (callId: string): string => `${callId}:dial:block`;

/**
 * Writes a decision once; when its _id is held already (a retried job) the first one stands
 * and is returned.
 */
export async function recordDecision(db: Db, doc: DialDecisionDoc): Promise<DialDecisionDoc> {
  if (await claim(dialDecisionsCollection(db), doc)) return doc;
  return (await dialDecisionsCollection(db).findOne({ _id: doc._id })) ?? doc;
}

/** The terminal decision (allow or block) already taken for a call at a stage, if any. */
export function findFinalDecision(db: Db, callId: string, stage: DialStage): Promise<DialDecisionDoc | null> {
  return dialDecisionsCollection(db).findOne({ _id: `${callId}:${stage}` });
}
