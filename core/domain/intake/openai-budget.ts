// A firm's OpenAI budget (docs/extract.md#budget): the characters its extractions may send to the
// model per UTC day — the firm's `openai_daily_char_budget`, else the platform's
// OPENAI_DAILY_CHARS_PER_FIRM. An extraction's prompt is counted before the request is made; one
// that would take the firm past its budget is not made, and the deterministic extractor answers.
//
// The count is in Redis, one hash per day with a field per firm: HINCRBY is atomic (FerretDB's
// $inc is not), so concurrent extractions of one firm never spend more than its budget between
// them: each adds its characters and keeps them only if the total it saw is within the budget,
// else takes them back (a refusal may briefly make a concurrent one see more and be refused too,
// never the other way). Redis unavailable: nothing is sent (the budget cannot be checked).
import { redisKeys } from '../../platform/redis-keys.js';
import type { Services } from '../../wiring/services.js';
import { getFirm } from '../firms/firms.js';

const DAY_MS = 24 * 3_600_000;

export const today = (now = Date.now()): number => Math.floor(now / DAY_MS);

/** The firm's budget in characters per UTC day. */
async function budgetOf(services: Services, firm: string): Promise<number> {
  const doc = await getFirm(services.mongo.db, firm);
  return doc?.settings.openai_daily_char_budget ?? services.config.openaiDailyCharsPerFirm;
}

/** Why an extraction was not sent: stored as a call's fallback_reason, logged for the utility. */
export const BUDGET_SPENT =
  "The firm's OpenAI budget for today (UTC) is spent (openai_daily_char_budget, default OPENAI_DAILY_CHARS_PER_FIRM); the deterministic extractor answered.";

/**
 * Takes `chars` from the firm's budget for today: true when they fit (the request may be made),
 * false when they do not or the count cannot be taken (nothing is sent; counted as a refusal).
 */
export async function spendOpenAiChars(services: Services, firm: string, chars: number): Promise<boolean> {
  const keys = redisKeys(services.config);
  const day = today();
  const counter = keys.openaiSpend('chars', day);
  // Kept through the next day too, for a late scrape.
  const expireAt = (day + 2) * DAY_MS;
  try {
    const budget = await budgetOf(services, firm);
    const total = await services.redis.hincrby(counter, firm, chars);
    await services.redis.pexpireat(counter, expireAt);
    if (total <= budget) return true;
    await services.redis.hincrby(counter, firm, -chars);
  } catch (err) {
    services.log.warn({ firm, err: (err as Error).message }, 'OpenAI budget not checked; not sending');
  }
  const refused = keys.openaiSpend('refused', day);
  await services.redis
    .multi()
    .hincrby(refused, firm, 1)
    .pexpireat(refused, expireAt)
    .exec()
    .catch(() => undefined);
  return false;
}

/** Today's characters sent and extractions refused, per firm (for /metrics). */
export async function openAiSpendToday(
  services: Pick<Services, 'redis' | 'config'>,
): Promise<{ chars: Record<string, string>; refused: Record<string, string> }> {
  const keys = redisKeys(services.config);
  const day = today();
  const [chars, refused] = await Promise.all([
    services.redis.hgetall(keys.openaiSpend('chars', day)),
    services.redis.hgetall(keys.openaiSpend('refused', day)),
  ]);
  return { chars, refused };
}
