import type { Services } from '../../wiring/services.js';
import { redisKeys } from '../../platform/redis-keys.js';
import type { VoiceEntry } from '../../integrations/voice/provider.js';

const CACHE_TTL_SECONDS = 3600;

/**
 * All voices of the configured platform. The provider's list is cached in Redis for an hour
 * (Retell's list changes rarely and is slow); with Redis down it is fetched directly.
 */
export async function listVoices(services: Services): Promise<VoiceEntry[]> {
  const key = redisKeys(services.config).voiceList(services.voice.name);
  if (services.redis.status === 'ready') {
    try {
      const cached = await services.redis.get(key);
      if (cached !== null) return JSON.parse(cached) as VoiceEntry[];
    } catch {
      // a cache miss, in effect
    }
  }
  const voices = await services.voice.listVoices();
  if (services.redis.status === 'ready') {
    await services.redis.set(key, JSON.stringify(voices), 'EX', CACHE_TTL_SECONDS).catch(() => {});
  }
  return voices;
}

export async function findVoice(services: Services, voiceId: string): Promise<VoiceEntry | undefined> {
  return (await listVoices(services)).find((v) => v.voice_id === voiceId);
}
