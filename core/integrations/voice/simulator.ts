import type { Config } from '../../config.js';
import type { Queues } from '../../../jobs/queues.js';
import type { PlaceCallRequest, ProviderCall, VoiceEntry, VoiceProvider } from './provider.js';
import { SIMULATOR_VOICES } from './simulator-voices.js';

export class SimulatorProvider implements VoiceProvider {
  readonly name = 'simulator' as const;
  constructor(
    private readonly config: Config,
    private readonly queues: Queues,
  ) {}

  async listVoices(): Promise<VoiceEntry[]> {
    return SIMULATOR_VOICES;
  }

  async placeCall(_request: PlaceCallRequest): Promise<ProviderCall> {
    void this.config;
    void this.queues;
    throw new Error('simulator placeCall: being written');
  }

  async findCall(_callId: string, _firm: string): Promise<ProviderCall | null> {
    throw new Error('simulator findCall: being written');
  }
}
