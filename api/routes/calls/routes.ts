import { requireFirmToRead, requireListFirm, requireRecord } from '../../../core/domain/access/access.js';
import { getFirmAgent } from '../../../core/domain/agents/agents.js';
import { findCall, registerOutboundCall, replayedOutboundCall } from '../../../core/domain/calls/calls.js';
import { listFinishedCalls } from '../../../core/domain/calls/calls-list.js';
import { ensureListed } from '../../../core/domain/calls/call-list-index.js';
import { idempotencyKeyOf } from '../../idempotency-header.js';
import { defineRoute } from '../../route.js';
import { IdempotencyKeyHeader } from '../../schemas/common.js';
import { requestGate } from '../../../core/domain/calls/request-gate.js';
import { callView } from './present.js';
import {
  CallParams,
  CallRecord,
  CreateOutboundCallBody,
  CreateOutboundCallResponse,
  ListCallsBody,
  ListCallsResponse,
} from './schema.js';

const tag = 'Voice & Chat';

export const callRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/v2/create-outbound-call',
    operationId: 'createOutboundCall',
    summary:
      'Register an outbound call; a worker places it once the dial gate allows it (409 dial_blocked, 409 dial_deferred with retry_at, or with when_allowed 200 status scheduled). Optional Idempotency-Key header: a repeat within 24 h returns the same call_id',
    tag,
    auth: { kind: 'token' },
    body: CreateOutboundCallBody,
    requestHeaders: IdempotencyKeyHeader,
    response: CreateOutboundCallResponse,
    errors: [403, 404, 409],
    handler: async ({ services, principal, body, koa }) => {
      const idempotencyKey = idempotencyKeyOf(koa);
      const db = services.mongo.db;
      const firm = await requireFirmToRead(db, principal, body.firmSlug);
      const replayed =
        idempotencyKey === undefined ? null : await replayedOutboundCall(services, firm._id, idempotencyKey);
      if (replayed !== null) {
        koa.set('Idempotent-Replayed', 'true');
        return { call_id: replayed.call_id, status: replayed.status };
      }
      const gate = requestGate(services, firm, body.toNumber, body.when_allowed === true);
      const agent = await getFirmAgent(db, firm._id, body.agentId);
      const result = await registerOutboundCall(
        services,
        {
          firm,
          agent,
          toNumber: body.toNumber,
          ...(body.dynamicVariables === undefined ? {} : { dynamicVariables: body.dynamicVariables }),
          gate,
        },
        idempotencyKey,
      );
      if (result.repeated) koa.set('Idempotent-Replayed', 'true');
      return { call_id: result.call_id, status: result.status };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/v2/get-call/{call_id}',
    operationId: 'getCall',
    summary:
      "Read one call record, by the call_id the API shows: ours, or for an inbound call the voice provider's call id",
    tag,
    auth: { kind: 'token' },
    params: CallParams,
    response: CallRecord,
    errors: [404],
    handler: async ({ services, principal, params }) => {
      // A firm's token finds its own inbound call by the provider's id; the platform's, any firm's.
      const firm = principal.kind === 'platform' ? null : principal.firm;
      const call = requireRecord(principal, await findCall(services.mongo.db, params.call_id, firm), 'call');
      // Shown finished here, so in list-calls from now on (its ending job adds it just after).
      await ensureListed(services, call);
      return callView(call);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/v2/list-calls',
    operationId: 'listCalls',
    summary:
      'Finished calls of a firm (ended, not_connected, error), newest end_timestamp first; keyset pagination with an opaque cursor',
    tag,
    auth: { kind: 'token' },
    body: ListCallsBody,
    response: ListCallsResponse,
    errors: [403, 404],
    handler: async ({ services, principal, body }) => {
      const firm = await requireListFirm(services.mongo.db, principal, body.firmSlug);
      const page = await listFinishedCalls(services, firm._id, body.limit, body.cursor);
      return { calls: page.calls.map(callView), next_cursor: page.next_cursor };
    },
  }),
];
