import type { Db } from 'mongodb';
import type { Logger } from 'pino';
import { resolveCallId } from '../../../core/domain/calls/call-events.js';
import { callsCollection } from '../../../core/domain/calls/calls.js';
import { snapshotProviderCall } from '../../../core/domain/calls/provider-call.js';
import { claim } from '../../../core/platform/db/claim.js';
import { COLLECTIONS } from '../../../core/platform/db/collections.js';
import { invalidRequest } from '../../../core/platform/errors.js';

// A Retell custom function's request, in either payload mode (Retell's custom-function doc;
// retell-sdk's CustomTool.args_at_root):
// - the default body `{name, call, args}`: the call object says which call it is;
// - "Payload: args only": the body is the args alone. Nothing Retell adds says which call it is
//   from, so the tool must be configured to send it: a query parameter `call_id={{call_id}}` in
//   its URL, or a header `X-Retell-Call-Id: {{call_id}}` (`{{call_id}}` is one of Retell's
//   system dynamic variables; custom functions take static or dynamic-variable headers and
//   query parameters). A variable Retell cannot fill stays as its literal text.
// The body is told apart by its `call`: an object there is the default payload.

/** The header that may carry the call's id (any casing; Koa reads headers case-insensitively). */
export const CALL_ID_HEADER = 'X-Retell-Call-Id';

export interface ToolRequest {
  mode: 'default' | 'args_only';
  args: Record<string, unknown>;
  /** Retell's call id, when the request says it; null when it does not. */
  providerCallId: string | null;
  /** The call object of the default payload; null with args only. */
  call: Record<string, unknown> | null;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A call id as given, or null when absent, blank, or still an unfilled `{{…}}` template. */
function callIdOf(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const id = value.trim();
  if (id === '' || id.length > 256 || id.includes('{{') || id.includes('}}')) return null;
  return id;
}

export function readToolRequest(
  body: Record<string, unknown>,
  query: { call_id?: string | undefined },
  header: string,
): ToolRequest {
  if (isObject(body.call)) {
    const args = body.args ?? {};
    if (!isObject(args)) {
      throw invalidRequest('args must be an object.', [{ path: '/args', message: 'must be an object' }]);
    }
    return { mode: 'default', args, call: body.call, providerCallId: callIdOf(body.call.call_id) };
  }
  return {
    mode: 'args_only',
    args: body,
    call: null,
    providerCallId: callIdOf(query.call_id) ?? callIdOf(header),
  };
}

/**
 * The call object the tool reads (its dynamic variables, its numbers): the default payload's
 * own, or, with args only, what our record of that call knows.
 */
export async function toolCall(
  db: Db,
  request: ToolRequest & { providerCallId: string },
  ourCallId: string,
  firm: string,
): Promise<Record<string, unknown>> {
  if (request.call !== null) return request.call;
  const stored = await callsCollection(db).findOne({ _id: ourCallId });
  if (stored === null || stored.firm !== firm) return { call_id: request.providerCallId };
  return {
    call_id: request.providerCallId,
    direction: stored.direction,
    ...(stored.from_number === null ? {} : { from_number: stored.from_number }),
    ...(stored.to_number === null ? {} : { to_number: stored.to_number }),
    retell_llm_dynamic_variables: stored.dynamic_variables,
  };
}

/** Our call id for the provider's call the request names (ours in its metadata, when it has the call object). */
export const ourCallIdFor = (
  db: Db,
  firm: string,
  request: ToolRequest & { providerCallId: string },
): Promise<string> =>
  resolveCallId(db, firm, snapshotProviderCall({ ...request.call, call_id: request.providerCallId }));

/** What the agent says when the request did not say which call it is from. */
export const CALL_NOT_IDENTIFIED =
  'The booking system cannot be used from this call right now. Take the caller’s name and number and tell them someone from the firm will call them back to set the appointment.';

/**
 * Logs, once per firm, that its custom functions do not say which call they are from (a claim
 * on the firm: every later request of that firm is answered the same, without a log line).
 */
export async function noteUnidentifiedCall(
  db: Db,
  log: Logger,
  firm: string,
  tool: string,
  mode: ToolRequest['mode'],
): Promise<void> {
  const notices = db.collection<{ _id: string; firm: string; tool: string; mode: string; at: Date }>(
    COLLECTIONS.toolCallNotices,
  );
  const first = await claim(notices, {
    _id: firm,
    firm,
    tool,
    mode,
    at: new Date(),
  });
  if (!first) return;
  log.error(
    { firm, tool, mode },
    mode === 'args_only'
      ? `Retell custom function "${tool}" sends its args only and no call id: add the query parameter call_id={{call_id}} to its URL, or the header ${CALL_ID_HEADER}: {{call_id}} (logged once per firm)`
      : `Retell custom function "${tool}" sent a call object without call_id (logged once per firm)`,
  );
}
