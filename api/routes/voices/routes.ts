import { Type } from '@sinclair/typebox';
import { listVoices } from '../../../core/domain/agents/voices.js';
import { defineRoute } from '../../route.js';

export const VoiceEntry = Type.Object({
  voice_id: Type.String(),
  name: Type.String(),
  language: Type.String({ description: 'Locale tag, e.g. en-US' }),
  gender: Type.Union([Type.Literal('male'), Type.Literal('female'), Type.Literal('neutral')]),
  provider: Type.Optional(Type.String()),
  accent: Type.Optional(Type.String()),
  preview_audio_url: Type.Optional(Type.String()),
});

export const voiceRoutes = [
  defineRoute({
    method: 'GET',
    path: '/api/v2/list-voices',
    operationId: 'listVoices',
    summary: 'All voices of the voice platform (the simulator catalogue, or Retell, cached)',
    tag: 'Voice & Chat',
    auth: { kind: 'token' },
    response: Type.Array(VoiceEntry),
    // The provider refused our key (502); failing, with no list of its kept (503).
    errors: [502],
    handler: async ({ services }) => listVoices(services),
  }),
];
