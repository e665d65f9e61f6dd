import type { Db } from 'mongodb';
import type { Config } from '../../platform/config.js';
import type { Queues } from '../../../jobs/queues.js';
import type { VoiceProvider } from './provider.js';
import { RetellProvider } from './retell.js';
import { SimulatorProvider } from './simulator.js';

/** The configured voice provider (VOICE_PROVIDER): the simulator by default, or Retell. */
export function createVoiceProvider(config: Config, queues: Queues, db: Db): VoiceProvider {
  switch (config.voiceProvider) {
    case 'simulator':
      return new SimulatorProvider(config, queues, db);
    case 'retell':
      // loadConfig refuses VOICE_PROVIDER=retell without RETELL_API_KEY.
      return new RetellProvider({ apiKey: config.retellApiKey ?? '', baseUrl: config.retellBaseUrl });
  }
}
