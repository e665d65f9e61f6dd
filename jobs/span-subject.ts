import type { SpanSubject } from '../core/platform/telemetry/start.js';

// What a trace shows of a job's payload: the firm, the call and the campaign it is about, read
// from the names the job table's payloads use (firm, callId, campaignId, a provider event's
// call.metadata.call_id). Never a phone, a name or a secret.

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

export function spanSubjectOf(data: unknown): SpanSubject {
  if (typeof data !== 'object' || data === null) return {};
  const payload = data as Record<string, unknown>;
  const call = payload.call as { metadata?: { call_id?: unknown } } | undefined;
  const subject: SpanSubject = {};
  const firm = text(payload.firm);
  const callId = text(payload.callId) ?? text(call?.metadata?.call_id);
  const campaignId = text(payload.campaignId);
  if (firm !== undefined) subject.firm = firm;
  if (callId !== undefined) subject.callId = callId;
  if (campaignId !== undefined) subject.campaignId = campaignId;
  return subject;
}
