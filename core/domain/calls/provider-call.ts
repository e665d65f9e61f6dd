import type { ProviderCallSnapshot } from '../../../jobs/calls.js';

// A provider's `call` object (Retell's shape) as the service keeps it: only the fields it uses,
// each typed and bounded, read by own property only. Everything else — transcript_object,
// transcript_with_tool_calls, unknown fields — is dropped at the door, so a webhook's job in
// Redis stays small whatever the body held. Bounding keys and depth was not enough: 200 keys of
// 20,000 characters made a 2 MB job, so the analysis data and the summary share a
// byte budget, cut the same way for the same body (a call_analyzed job's id carries a digest of
// the snapshot: jobs/call-analysis.ts).

/** The most of a transcript kept (and read: the opt-out rules read all of it). */
export const TRANSCRIPT_MAX_CHARS = 200_000;
const MAX_DEPTH = 4;
const MAX_KEYS = 200;
/** The summary and custom_analysis_data together, as UTF-8 JSON (the transcript has its own cap). */
const ANALYSIS_MAX_BYTES = 16_384;
/** The summary's share at most; the analysis data (names, phone, email) gets the rest. */
const SUMMARY_MAX_BYTES = 4_096;

type Json = Record<string, unknown>;

const own = (o: Json, key: string): unknown => (Object.hasOwn(o, key) ? o[key] : undefined);
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const str = (v: unknown, max: number): string | undefined =>
  typeof v === 'string' && v.length > 0 ? v.slice(0, max) : undefined;
const ms = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 && v < 1e15 ? Math.round(v) : undefined;

export function snapshotProviderCall(call: Json & { call_id: string }): ProviderCallSnapshot {
  const snapshot: ProviderCallSnapshot = { call_id: call.call_id };
  const strings: Array<[keyof ProviderCallSnapshot, number]> = [
    ['call_status', 40],
    ['agent_id', 200],
    ['direction', 20],
    ['from_number', 40],
    ['to_number', 40],
    ['disconnection_reason', 200],
    ['transcript', TRANSCRIPT_MAX_CHARS],
  ];
  for (const [key, max] of strings) {
    const value = str(own(call, key), max);
    if (value !== undefined) (snapshot as unknown as Json)[key] = value;
  }
  for (const key of ['start_timestamp', 'end_timestamp', 'duration_ms'] as const) {
    const value = ms(own(call, key));
    if (value !== undefined) snapshot[key] = value;
  }
  const metadata = own(call, 'metadata');
  const ours = isObject(metadata) ? str(own(metadata, 'call_id'), 128) : undefined;
  if (ours !== undefined) snapshot.metadata = { call_id: ours };
  const variables = own(call, 'retell_llm_dynamic_variables');
  if (isObject(variables)) snapshot.retell_llm_dynamic_variables = dynamicVariables(variables);
  const analysis = own(call, 'call_analysis');
  if (isObject(analysis)) {
    const successful = own(analysis, 'call_successful');
    const voicemail = own(analysis, 'in_voicemail');
    // Three bytes for the brackets and comma of [summary, data]: the budget is the pair's size.
    const budget: Budget = { left: ANALYSIS_MAX_BYTES - 3 };
    const summary = str(own(analysis, 'call_summary'), 20_000);
    const kept = summary === undefined ? undefined : fitString(summary, SUMMARY_MAX_BYTES);
    budget.left -= kept === undefined ? 4 : jsonBytes(kept);
    snapshot.call_analysis = {
      call_summary: kept ?? null,
      user_sentiment: str(own(analysis, 'user_sentiment'), 100) ?? null,
      call_successful: typeof successful === 'boolean' ? successful : null,
      ...(typeof voicemail === 'boolean' ? { in_voicemail: voicemail } : {}),
      custom_analysis_data: plainObject(own(analysis, 'custom_analysis_data'), 0, budget) ?? {},
    };
  }
  return snapshot;
}

function dynamicVariables(given: Json): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const [k, v] of Object.entries(given).slice(0, 50)) {
    if (/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(k) && ['string', 'number', 'boolean'].includes(typeof v)) {
      vars[k] = String(v).slice(0, 2000);
    }
  }
  return vars;
}

/** What is left of the analysis budget, in bytes of UTF-8 JSON; each kept value takes its share. */
interface Budget {
  left: number;
}

const jsonBytes = (v: string): number => Buffer.byteLength(JSON.stringify(v));

function take(budget: Budget, bytes: number): boolean {
  if (bytes > budget.left) return false;
  budget.left -= bytes;
  return true;
}

/**
 * `s`, or its longest-found beginning whose JSON fits in `maxBytes`: cut in proportion to the
 * overshoot until it fits (each round shorter), never between the halves of a surrogate pair.
 */
function fitString(s: string, maxBytes: number): string {
  let cut = s;
  let bytes = jsonBytes(cut);
  while (bytes > maxBytes && cut.length > 0) {
    let n = Math.min(cut.length - 1, Math.floor((cut.length * maxBytes) / bytes));
    const last = cut.charCodeAt(n - 1);
    if (n > 0 && last >= 0xd800 && last <= 0xdbff) n -= 1;
    cut = cut.slice(0, n);
    bytes = jsonBytes(cut);
  }
  return cut;
}

/**
 * Plain JSON data with keys MongoDB stores as given (no `$` prefix, no dots), bounded in depth
 * and keys and within `budget`: entries in the order given until the budget is spent (the last
 * string cut to fit), so the same object always keeps the same part. undefined when not even
 * `{}` fits.
 */
function plainObject(value: unknown, depth: number, budget: Budget): Json | undefined {
  if (!isObject(value) || depth > MAX_DEPTH) return take(budget, 2) ? {} : undefined;
  if (!take(budget, 2)) return undefined;
  const out: Json = {};
  for (const [key, v] of Object.entries(value).slice(0, MAX_KEYS)) {
    if (
      key.startsWith('$') ||
      key.includes('.') ||
      key.includes('\0') ||
      key.length > 200 ||
      key === '__proto__'
    ) {
      continue;
    }
    // The key, its colon and a comma.
    const keyBytes = jsonBytes(key) + 2;
    if (!take(budget, keyBytes)) break;
    const safe = plainValue(v, depth + 1, budget);
    if (safe === undefined) {
      budget.left += keyBytes;
      continue;
    }
    out[key] = safe;
  }
  return out;
}

function plainValue(v: unknown, depth: number, budget: Budget): unknown {
  if (v === null || typeof v === 'boolean') return take(budget, 5) ? v : undefined;
  if (typeof v === 'number') {
    return Number.isFinite(v) && take(budget, JSON.stringify(v).length) ? v : undefined;
  }
  if (typeof v === 'string') {
    // An empty string still costs its quotes: nothing at all fits when those do not.
    if (budget.left < 2) return undefined;
    const kept = fitString(v.slice(0, 20_000), budget.left);
    budget.left -= jsonBytes(kept);
    return kept;
  }
  if (Array.isArray(v)) {
    if (depth > MAX_DEPTH || !take(budget, 2)) return undefined;
    const out: unknown[] = [];
    for (const x of v.slice(0, MAX_KEYS)) {
      // Its comma, then the item (null for what JSON has no place for, as before).
      if (!take(budget, 1)) break;
      const item = plainValue(x, depth + 1, budget);
      if (item !== undefined) out.push(item);
      else if (take(budget, 4)) out.push(null);
      else break;
    }
    return out;
  }
  if (isObject(v)) return plainObject(v, depth, budget);
  return undefined;
}
