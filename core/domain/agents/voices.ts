import type { Services } from '../../wiring/services.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { badGateway, serviceUnavailable } from '../../platform/errors.js';
import { ProviderError, type VoiceEntry } from '../../integrations/voice/provider.js';

const CACHE_TTL_SECONDS = 3600;
/** How long the last list the provider gave stands in for it while it fails. */
const LAST_GOOD_TTL_SECONDS = 7 * 24 * 3600;
/** While the provider fails, it is asked again at most this often (the last list answered meanwhile). */
const FAILING_RETRY_SECONDS = 60;

/**
 * All voices of the configured platform. The provider's list is cached in Redis for an hour
 * (Retell's list changes rarely and is slow); with Redis down it is fetched directly. While the
 * provider fails, the last list it gave (kept a week) is answered, and the provider asked again a
 * minute later; with none, its failure is ours to name (voiceProviderFailure), never its own
 * status passed on.
 */
export async function listVoices(services: Services): Promise<VoiceEntry[]> {
  const keys = redisKeys(services.config);
  const key = keys.voiceList(services.voice.name);
  const lastGood = keys.voiceListLastGood(services.voice.name);
  const cached = await readCached(services, key);
  if (cached !== null) return cached;
  let voices: VoiceEntry[];
  try {
    voices = await services.voice.listVoices();
  } catch (err) {
    const stale = await readCached(services, lastGood);
    if (stale === null) throw voiceProviderFailure(err);
    services.log.warn(
      { provider: services.voice.name, err: (err as Error).message },
      'list-voices: the provider failed; answered with the last list it gave',
    );
    // Not every request of an outage waits on the failing provider: the last list stands in as
    // the cached one for a minute.
    await services.redis.set(key, JSON.stringify(stale), 'EX', FAILING_RETRY_SECONDS).catch(() => {});
    return stale;
  }
  if (services.redis.status === 'ready') {
    const json = JSON.stringify(voices);
    // Two commands, not one MULTI: on a Redis Cluster the two keys may lie in different slots.
    await Promise.all([
      services.redis.set(key, json, 'EX', CACHE_TTL_SECONDS),
      services.redis.set(lastGood, json, 'EX', LAST_GOOD_TTL_SECONDS),
    ]).catch(() => {});
  }
  return voices;
}

async function readCached(services: Services, key: string): Promise<VoiceEntry[] | null> {
  if (services.redis.status !== 'ready') return null;
  try {
    const cached = await services.redis.get(key);
    return cached === null ? null : (JSON.parse(cached) as VoiceEntry[]);
  } catch {
    return null; // a cache miss, in effect
  }
}

/**
 * The provider's failure as this service's answer: its 401 (our platform key refused) or another
 * refusal is a `502`, not the client's `401`; its 429, a 5xx or no answer is `503 unavailable`
 * with `Retry-After` (the provider's own, for a 429).
 */
function voiceProviderFailure(err: unknown): Error {
  if (!(err instanceof ProviderError)) return err as Error;
  if (err.kind === 'rejected') {
    return badGateway(
      'voice_provider_error',
      `The voice provider refused the service's request for its voices${err.status === undefined ? '' : ` (${err.status})`}; the platform's operator should check its key.`,
    );
  }
  const seconds = err.retryAfterMs === undefined ? 5 : Math.max(1, Math.ceil(err.retryAfterMs / 1000));
  return serviceUnavailable(
    "The voice provider's list of voices cannot be had right now; retry shortly.",
    seconds,
  );
}

export async function findVoice(services: Services, voiceId: string): Promise<VoiceEntry | undefined> {
  return (await listVoices(services)).find((v) => v.voice_id === voiceId);
}
