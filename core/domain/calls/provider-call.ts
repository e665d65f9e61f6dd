import type { ProviderCallSnapshot } from '../../../jobs/calls.js';

// A provider's `call` object (Retell's shape) as the service keeps it: only the fields it uses,
// each typed and bounded, read by own property only. Everything else — transcript_object,
// transcript_with_tool_calls, unknown fields — is dropped at the door, so a webhook's job in
// Redis stays small whatever the body held.

const TRANSCRIPT_MAX_CHARS = 200_000;
const MAX_DEPTH = 4;
const MAX_KEYS = 200;

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
    snapshot.call_analysis = {
      call_summary: str(own(analysis, 'call_summary'), 20_000) ?? null,
      user_sentiment: str(own(analysis, 'user_sentiment'), 100) ?? null,
      call_successful: typeof successful === 'boolean' ? successful : null,
      ...(typeof voicemail === 'boolean' ? { in_voicemail: voicemail } : {}),
      custom_analysis_data: plainObject(own(analysis, 'custom_analysis_data'), 0),
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

/** Plain JSON data with keys MongoDB stores as given (no `$` prefix, no dots), bounded in size and depth. */
function plainObject(value: unknown, depth: number): Json {
  if (!isObject(value) || depth > MAX_DEPTH) return {};
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
    const safe = plainValue(v, depth + 1);
    if (safe !== undefined) out[key] = safe;
  }
  return out;
}

function plainValue(v: unknown, depth: number): unknown {
  if (v === null || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'string') return v.slice(0, 20_000);
  if (Array.isArray(v))
    return depth > MAX_DEPTH ? undefined : v.slice(0, MAX_KEYS).map((x) => plainValue(x, depth + 1) ?? null);
  if (isObject(v)) return plainObject(v, depth);
  return undefined;
}
