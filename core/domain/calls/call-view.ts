import { shownCallId, type CallDoc, type CallEffectState } from './calls.js';
import { isIntakeless, outcomeView } from './call-outcome-view.js';
import { CALL_EFFECTS, type CallEffectName } from '../../../jobs/call-analysis.js';

// The call record's public shape: what get-call answers and what call.* events carry
// (docs/events.md). Never a secret: the provider's ids and our effect records stay inside.

/**
 * An effect's state for clients: `running` (an attempt under way, or one whose outcome is not
 * known yet) shows as `pending` — it has not happened for sure. A call that ended without
 * connecting, or reaching voicemail, has nothing to act on: its effects show `skipped` before any
 * record exists.
 */
function effectState(call: CallDoc, name: CallEffectName): CallEffectState {
  const state = call.effects?.[name]?.state;
  if (state === undefined) return isIntakeless(call) ? 'skipped' : 'pending';
  return state === 'running' ? 'pending' : state;
}

/** The call record as the API shows it. */
export function callView(call: CallDoc) {
  return {
    call_id: shownCallId(call),
    agent_id: call.agent_id,
    firm: call.firm,
    direction: call.direction,
    from_number: call.from_number,
    to_number: call.to_number,
    status: call.status,
    dynamic_variables: call.dynamic_variables,
    start_timestamp: call.start_timestamp,
    end_timestamp: call.end_timestamp,
    duration_ms: call.duration_ms,
    disconnection_reason: call.disconnection_reason,
    transcript: call.transcript,
    call_analysis: call.call_analysis,
    ...(call.campaign_id === undefined ? {} : { campaign_id: call.campaign_id }),
    ...(call.scheduled_for === undefined ? {} : { scheduled_for: call.scheduled_for }),
    ...(call.dial_block_reason === undefined ? {} : { dial_block_reason: call.dial_block_reason }),
    caller_data:
      call.extraction === undefined
        ? null
        : {
            first_name: call.extraction.first_name,
            last_name: call.extraction.last_name,
            phone: call.extraction.phone,
            email: call.extraction.email,
            case_type: call.extraction.case_type,
            summary: call.extraction.summary,
            urgency: call.extraction.urgency,
          },
    effects: Object.fromEntries(CALL_EFFECTS.map((name) => [name, effectState(call, name)])) as Record<
      CallEffectName,
      CallEffectState
    >,
    lead_id: call.lead_id ?? null,
    ...outcomeView(call),
    created_at: call.created_at.toISOString(),
  };
}
