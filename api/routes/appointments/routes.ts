import { requireFirm } from '../../../core/domain/access/access.js';
import {
  CALENDAR_UNREACHABLE,
  isProviderFailure,
  runTool,
} from '../../../core/domain/appointments/agent-tools.js';
import { freeSlots } from '../../../core/domain/appointments/availability.js';
import { bookAppointment } from '../../../core/domain/appointments/booking.js';
import { idempotencyKeyOf } from '../../idempotency-header.js';
import { defineRoute, type WebhookCredentials } from '../../route.js';
import { IdempotencyKeyHeader } from '../../schemas/common.js';
import { authenticateCallWebhook } from '../call-webhook/routes.js';
import { requireCallOfFirm } from '../../../core/domain/calls/call-owner.js';
import { snapshotProviderCall } from '../../../core/domain/calls/provider-call.js';
import { appointmentView } from './present.js';
import {
  AppointmentResponse,
  AvailabilityQuery,
  AvailabilityResponse,
  CreateAppointmentBody,
  ToolBody,
  ToolParams,
  ToolQuery,
  ToolResponse,
} from './schema.js';
import {
  CALL_ID_HEADER,
  CALL_NOT_IDENTIFIED,
  noteUnidentifiedCall,
  ourCallIdFor,
  readToolRequest,
  toolCall,
} from './tool-request.js';

const tag = 'Appointments';

export const appointmentRoutes = [
  defineRoute({
    method: 'GET',
    path: '/api/appointments/availability',
    operationId: 'appointmentAvailability',
    summary:
      "Free slots of the firm's booking provider (Cal.com) between two dates (at most 14 days), in the time zone asked for (else the firm's); cached 30 s",
    tag,
    auth: { kind: 'token' },
    query: AvailabilityQuery,
    response: AvailabilityResponse,
    errors: [403, 404, 409, 502],
    handler: async ({ services, principal, query }) => {
      const firm = await requireFirm(services.mongo.db, principal, query.firmSlug);
      const slots = await freeSlots(services, firm, {
        start: query.start,
        end: query.end,
        // The caller's zone, or the firm's (docs/appointments.md#availability).
        timeZone: query.timeZone ?? firm.settings.timezone,
      });
      return { slots: slots.map((start) => ({ start })) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/appointments',
    operationId: 'createAppointment',
    summary:
      "Book a slot through the firm's booking provider. Optional Idempotency-Key header: one booking per key. 409 slot_unavailable (details: the next free slots) or booking_not_configured",
    tag,
    auth: { kind: 'token' },
    body: CreateAppointmentBody,
    requestHeaders: IdempotencyKeyHeader,
    response: AppointmentResponse,
    errors: [403, 404, 409, 502],
    handler: async ({ services, principal, body, koa }) => {
      const idempotencyKey = idempotencyKeyOf(koa);
      const firm = await requireFirm(services.mongo.db, principal, body.firmSlug);
      const { result, repeated } = await bookAppointment(
        services,
        firm,
        {
          start: body.start,
          attendee: body.attendee,
          ...(body.notes === undefined ? {} : { notes: body.notes }),
          ...(body.lead_id === undefined ? {} : { leadId: body.lead_id }),
        },
        idempotencyKey,
      );
      if (repeated) koa.set('Idempotent-Replayed', 'true');
      return appointmentView(result);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/v2/{firm}/tools/{name}',
    operationId: 'agentTool',
    summary:
      'Retell custom functions check_availability and book_appointment, authenticated as the call webhook; body {name, call, args}, ' +
      'or the args alone with ?call_id= or X-Retell-Call-Id ("Payload: args only"); answers short JSON for the LLM, 200 even when ' +
      'the request does not say which call it is from',
    tag,
    auth: { kind: 'webhook', authenticate: authenticateCallWebhook },
    params: ToolParams,
    query: ToolQuery,
    body: ToolBody,
    response: ToolResponse,
    errors: [403, 404, 409],
    handler: async ({ services, principal, params, query, body, koa, log }) => {
      const db = services.mongo.db;
      const firm = await requireFirm(db, principal, params.firm);
      const request = readToolRequest(body, query, koa.get(CALL_ID_HEADER));
      const { providerCallId } = request;
      if (providerCallId === null) {
        // The caller is on the line: a 4xx is silence to them. Say what to do instead, and tell
        // the operator once what is wrong with the function's setup.
        await noteUnidentifiedCall(db, log, firm._id, params.name, request.mode);
        return params.name === 'check_availability'
          ? { slots: [], message: CALL_NOT_IDENTIFIED }
          : { booked: false, message: CALL_NOT_IDENTIFIED };
      }
      // The conversation is our call (the provider's call id, or ours in its metadata).
      const identified = { ...request, providerCallId };
      // Signed with the key Retell signs every firm's calls with: only the firm whose call it is.
      if ((koa.state.webhook as WebhookCredentials).sharedKey === true) {
        await requireCallOfFirm(db, firm, snapshotProviderCall({ ...request.call, call_id: providerCallId }));
      }
      const callId = await ourCallIdFor(db, firm._id, identified);
      try {
        return await runTool(services, firm, {
          name: params.name,
          args: request.args,
          call: await toolCall(db, identified, callId, firm._id),
          subject: { source: 'call', id: callId },
        });
      } catch (err) {
        // The caller is on the line: the model needs words to say, not a 502 it cannot read. A
        // booking whose answer was lost is found by the call's next book_appointment (its key).
        if (!isProviderFailure(err)) throw err;
        log.warn({ err: err.message, tool: params.name }, 'booking provider failed during a call');
        return params.name === 'check_availability'
          ? { slots: [], message: CALENDAR_UNREACHABLE }
          : { booked: false, message: CALENDAR_UNREACHABLE };
      }
    },
  }),
];
