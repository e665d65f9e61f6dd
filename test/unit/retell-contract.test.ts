// The Retell side of "fakes from the providers' own documents": every body our tests send to the
// service as Retell (test/fakes/retell-fixtures.ts) is judged by test/fakes/spec/retell.json, the
// document `npm run providers:derive` makes from retell-sdk's .d.ts types — every webhook event
// of the SDK, and custom-function requests in both payload modes — and the document itself is
// the one the installed SDK makes.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { PhoneCallResponse } from 'retell-sdk/resources/call';
import { loadSpec } from '../fakes/spec/openapi-spec.js';
import {
  CHAT_EVENTS,
  VOICE_EVENTS,
  chatWebhook,
  conversationCall,
  customFunctionRequest,
  dialFailureCall,
  ivrCall,
  longConversationCall,
  ongoingCall,
  voiceWebhook,
  voicemailCall,
  type RetellCaller,
  type RetellChatEvent,
  type RetellVoiceEvent,
} from '../fakes/retell-fixtures.js';
import { readToolRequest } from '../../api/routes/appointments/tool-request.js';

const spec = loadSpec('retell');
const derivedFrom = spec.doc['x-derived-from'] as { version: string; sha256: Record<string, string> };
const sdkDir = join(import.meta.dirname, '..', '..', 'node_modules', 'retell-sdk');

const caller: RetellCaller = {
  first_name: 'Maria',
  last_name: 'Lopez',
  phone: '+14155550187',
  email: 'maria.lopez@example.com',
  case_type: 'Personal Injury',
  summary: 'Rear-ended at a red light.',
};

/** The schema a voice event's body is judged by. */
const schemaOf = (event: RetellVoiceEvent) =>
  event === 'transfer_started' || event === 'transfer_bridged' || event === 'transfer_cancelled'
    ? 'TransferWebhook'
    : 'CallWebhook';

type Reason = NonNullable<PhoneCallResponse['disconnection_reason']>;

describe('the derived Retell document', () => {
  it('is the one the installed retell-sdk makes: same version, same declaration files', () => {
    const sdk = JSON.parse(readFileSync(join(sdkDir, 'package.json'), 'utf8')) as { version: string };
    expect(derivedFrom.version).toBe(sdk.version);
    expect(Object.keys(derivedFrom.sha256).length).toBeGreaterThan(5);
    for (const [file, sha] of Object.entries(derivedFrom.sha256)) {
      const now = createHash('sha256')
        .update(readFileSync(join(sdkDir, file), 'utf8'))
        .digest('hex');
      expect(now, `${file} changed: run npm run providers:derive`).toBe(sha);
    }
  });
});

describe('webhook bodies as Retell sends them', () => {
  const calls: Array<[string, PhoneCallResponse]> = [
    ['a conversation', conversationCall(caller)],
    ['a voicemail', voicemailCall()],
    ['a phone menu', ivrCall()],
    ['a long call', longConversationCall(caller, 3)],
    ['a call mid-way', ongoingCall()],
  ];

  it('every voice event of the SDK, for every kind of call, conforms to the document', () => {
    for (const event of Object.keys(VOICE_EVENTS) as RetellVoiceEvent[]) {
      for (const [kind, call] of calls) {
        expect(spec.checkSchema(schemaOf(event), voiceWebhook(event, call)), `${event}: ${kind}`).toEqual([]);
      }
    }
  });

  it('a call that ended with each disconnection_reason of the SDK conforms', () => {
    const reasons = (
      spec.at('#/components/schemas/PhoneCallResponse/properties/disconnection_reason') as { enum: Reason[] }
    ).enum;
    expect(reasons).toContain('ivr_reached');
    for (const reason of reasons) {
      expect(
        spec.checkSchema('CallWebhook', voiceWebhook('call_ended', dialFailureCall(reason))),
        reason,
      ).toEqual([]);
    }
  });

  it('every chat event of the SDK conforms to the document', () => {
    for (const event of Object.keys(CHAT_EVENTS) as RetellChatEvent[]) {
      expect(spec.checkSchema('ChatWebhook', chatWebhook(event)), event).toEqual([]);
    }
  });

  it('a body off the document is caught: a wrong-case enum, an unknown field, a missing call', () => {
    const call = conversationCall(caller);
    expect(
      spec.checkSchema('CallWebhook', {
        event: 'call_ended',
        call: { ...call, disconnection_reason: 'User_Hangup' },
      }),
    ).toContainEqual(expect.stringMatching(/disconnection_reason must be one of/));
    expect(
      spec.checkSchema('CallWebhook', { event: 'call_ended', call: { ...call, caller_name: 'Maria' } }),
    ).toContainEqual(expect.stringMatching(/"caller_name"/));
    expect(spec.checkSchema('CallWebhook', { event: 'call_ended' })).toContainEqual(
      expect.stringMatching(/must have required property 'call'/),
    );
    expect(
      spec.checkSchema('ChatWebhook', { event: 'call_analyzed', chat: chatWebhook('chat_ended').chat }),
    ).not.toEqual([]);
  });
});

describe('custom-function requests in both payload modes', () => {
  const cases: Array<[string, Record<string, unknown>]> = [
    ['check_availability', {}],
    ['check_availability', { date: '2026-12-01', timeZone: 'America/Los_Angeles' }],
    ['book_appointment', { start: '2026-12-01T17:00:00Z', name: 'Sam Caller', email: 'sam@example.com' }],
  ];

  it('the default payload {name, call, args} conforms, and the route reads it as that', () => {
    for (const [name, args] of cases) {
      const body = customFunctionRequest(name, ongoingCall({ callId: 'call_contract_1' }), args);
      expect(spec.checkSchema('CustomFunctionRequest', body), name).toEqual([]);
      const read = readToolRequest(body as unknown as Record<string, unknown>, {}, '');
      expect(read).toMatchObject({ mode: 'default', args, providerCallId: 'call_contract_1' });
    }
  });

  it('"Payload: args only" is the args alone, and the route reads it as that, its call named by ?call_id= or the header', () => {
    for (const [name, args] of cases) {
      expect(spec.checkSchema('CustomFunctionArgsOnly', args), name).toEqual([]);
      expect(spec.checkSchema('CustomFunctionRequest', args), name).not.toEqual([]);
      expect(readToolRequest(args, { call_id: 'call_q' }, '')).toMatchObject({
        mode: 'args_only',
        args,
        providerCallId: 'call_q',
      });
      expect(readToolRequest(args, {}, 'call_h').providerCallId).toBe('call_h');
      expect(readToolRequest(args, { call_id: '{{call_id}}' }, '').providerCallId).toBeNull();
    }
  });
});

describe('requests our Retell client sends, judged by the document', () => {
  const headers = { authorization: 'Bearer key_x', 'content-type': 'application/json' };

  it('refuses a wrong-case enum, an unknown field and missing credentials', () => {
    const listCalls = (body: unknown, h: Record<string, string> = headers) =>
      spec.checkRequest({ method: 'POST', path: '/v3/list-calls', headers: h, body }).problems;
    expect(listCalls({ sort_order: 'descending', limit: 50 })).toEqual([]);
    expect(listCalls({ sort_order: 'DESCENDING' })).toEqual([
      'body/sort_order must be one of ["ascending","descending"]',
    ]);
    const create = (body: unknown, h: Record<string, string> = headers) =>
      spec.checkRequest({ method: 'POST', path: '/v2/create-phone-call', headers: h, body }).problems;
    expect(create({ from_number: '+14155550100', to_number: '+14155550123' })).toEqual([]);
    expect(create({ from_number: '+14155550100', to_number: '+14155550123', agent_id: 'a' })).toEqual([
      'body has a property the document does not have: "agent_id"',
    ]);
    expect(create({ to_number: '+14155550123' })).toEqual(["body must have required property 'from_number'"]);
    expect(
      create(
        { from_number: '+14155550100', to_number: '+14155550123' },
        { 'content-type': 'application/json' },
      ),
    ).toEqual(['the credentials the document requires (security) are missing']);
  });
});
