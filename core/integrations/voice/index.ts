import type { Config } from '../../config.js';
import type { Queues } from '../../../jobs/queues.js';
import type { VoiceProvider } from './provider.js';
import { SimulatorProvider } from './simulator.js';

/** The configured voice provider (VOICE_PROVIDER): the simulator by default, or Retell. */
export function createVoiceProvider(config: Config, queues: Queues): VoiceProvider {
  switch (config.voiceProvider) {
    case 'simulator':
      return new SimulatorProvider(config, queues);
    case 'retell':
      throw new Error('Retell provider: being written');
  }
}
