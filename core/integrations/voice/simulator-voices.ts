import type { VoiceEntry } from './provider.js';

/** The simulator's built-in voices: enough variety to configure agents with no outside account. */
export const SIMULATOR_VOICES: VoiceEntry[] = [
  {
    voice_id: 'sim-en-us-ava',
    name: 'Ava',
    language: 'en-US',
    gender: 'female',
    accent: 'American',
    provider: 'simulator',
  },
  {
    voice_id: 'sim-en-us-marcus',
    name: 'Marcus',
    language: 'en-US',
    gender: 'male',
    accent: 'American',
    provider: 'simulator',
  },
  {
    voice_id: 'sim-en-us-river',
    name: 'River',
    language: 'en-US',
    gender: 'neutral',
    accent: 'American',
    provider: 'simulator',
  },
  {
    voice_id: 'sim-en-gb-olivia',
    name: 'Olivia',
    language: 'en-GB',
    gender: 'female',
    accent: 'British',
    provider: 'simulator',
  },
  {
    voice_id: 'sim-es-mx-sofia',
    name: 'Sofía',
    language: 'es-MX',
    gender: 'female',
    accent: 'Mexican',
    provider: 'simulator',
  },
  {
    voice_id: 'sim-es-es-mateo',
    name: 'Mateo',
    language: 'es-ES',
    gender: 'male',
    accent: 'Castilian',
    provider: 'simulator',
  },
  {
    voice_id: 'sim-fr-fr-chloe',
    name: 'Chloé',
    language: 'fr-FR',
    gender: 'female',
    accent: 'Parisian',
    provider: 'simulator',
  },
];
