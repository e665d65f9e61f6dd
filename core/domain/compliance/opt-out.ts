import { shorten } from '../../platform/text.js';
import { parseTranscript } from '../intake/transcripts.js';
import { TRANSCRIPT_MAX_CHARS } from '../calls/provider-call.js';

// Opt-outs said or written by the person (docs/compliance.md#opt-outs): "stop calling me", "take
// me off your list", "don't call me again", "remove my number", "unsubscribe", "do not call", …
// and not their look-alikes ("don't stop, call me tomorrow", "I'll call you again", "call me
// again next week", "stop by the office", "don't call me before 10"). The text is cut into
// clauses (at . ! ? ; , : and line breaks), each clause normalised (lower case, straight
// apostrophes, "don't"/"dont" read as "do not", hyphens as spaces) and read as words by a few
// rules, each a walk over the clause's words: time linear in the text, no regex that can
// backtrack. What a rule looks for is an imperative aimed at the person's own number: a
// contact verb whose object is the person ("me", "us", "my number", "this phone"), with
// nothing after it but "again", "anymore", "ever", "please"… — a qualifier ("before 10",
// "on my work phone", "Mr. Smith") makes it a preference, not an opt-out. Quoted or reported
// speech ("he told me 'stop calling'") is not told apart. The phrase corpus
// (test/data/opt-out-corpus.json) is the specification: every opt-out detected, no look-alike.

export type OptOut = { optOut: true; words: string } | { optOut: false };

/**
 * How much of one text is read: all of what the service keeps of it (a chat message is at most
 * 4,000 characters, a call's transcript at most TRANSCRIPT_MAX_CHARS). Each rule is a walk over
 * the words, so the time is linear; an opt-out is often said last ("…and stop calling me"), so
 * nothing kept is left unread.
 */
const MAX_TEXT_CHARS = TRANSCRIPT_MAX_CHARS;
/** The words kept as evidence: the clause that opted out, on one line. */
const MAX_WORDS_CHARS = 200;

/**
 * Verbs of calling: "don't text me, call me" asks for calls, so texting and mailing are not among
 * them (a chat's "stop texting me" is a stop request, read by stopDoing).
 */
const CONTACT_VERBS = new Set(['call', 'phone', 'ring', 'contact', 'dial']);
const CONTACT_VERBS_ING = new Set([
  'calling',
  'phoning',
  'ringing',
  'contacting',
  'texting',
  'messaging',
  'bothering',
  'harassing',
  'dialing',
  'dialling',
]);
const STOP_VERBS = new Set(['stop', 'quit', 'cease']);
const REMOVE_VERBS = new Set(['remove', 'delete', 'erase', 'strike', 'scratch', 'drop']);
const TAKE_VERBS = new Set(['take', 'get', 'cross', 'pull', 'keep', ...REMOVE_VERBS]);
const PHONE_NOUNS = new Set([
  'number',
  'numbers',
  'phone',
  'cell',
  'mobile',
  'line',
  'name',
  'details',
  'info',
  'information',
  'contact',
]);
const LIST_NOUNS = new Set([
  'list',
  'lists',
  'database',
  'system',
  'records',
  'roster',
  'registry',
  'contacts',
  'file',
  'files',
]);
const CALL_NOUNS = new Set(['calls', 'calling', 'texts', 'messages', 'phone', 'robocalls']);
/** Words that may follow an opted-out object without making it a preference. */
const TAIL_WORDS = new Set([
  'again',
  'anymore',
  'any',
  'more',
  'ever',
  'please',
  'thanks',
  'thank',
  'you',
  'period',
  'ok',
  'okay',
  'alright',
  'now',
  'all',
  'whatsoever',
  'back',
]);
/** A subject before "do not call" or "never call" makes it a statement, not a request. */
const SUBJECTS = new Set(['i', 'you', 'we', 'they', 'he', 'she', 'it', 'people', 'who', 'that']);
/** Words between "do not want" and the calls it refuses ("any more", "to be", "you people"). */
const WANT_FILLER = new Set([
  'any',
  'more',
  'anymore',
  'further',
  'these',
  'those',
  'your',
  'of',
  'the',
  'to',
  'be',
  'phone',
  'people',
  'guys',
]);
const NEGATIONS = new Set(['not', 'never', 'no']);
/** A whole message of one of these (an SMS keyword) is an opt-out. */
const WHOLE_KEYWORDS = new Set(['stop', 'stop all', 'stopall', 'unsubscribe', 'opt out', 'optout']);

/** Whether `text` (something the person said or wrote) is an opt-out, and the words that were. */
export function detectOptOut(text: string): OptOut {
  const bounded = text.slice(0, MAX_TEXT_CHARS);
  const whole = words(normalise(bounded));
  if (WHOLE_KEYWORDS.has(whole.join(' '))) return { optOut: true, words: shorten(bounded, MAX_WORDS_CHARS) };
  for (const clause of bounded.split(/[.!?;,:\n\r]+/)) {
    const w = words(normalise(clause));
    if (w.length > 0 && isOptOutClause(w)) return { optOut: true, words: shorten(clause, MAX_WORDS_CHARS) };
  }
  return { optOut: false };
}

/**
 * The first opt-out in the person's turns of a plain transcript ("Agent: …" / "User: …"
 * lines, as Retell's `transcript` and the simulator write it); the agent's turns never count.
 */
export function detectOptOutInTranscript(transcript: string): OptOut {
  for (const turn of parseTranscript(transcript.slice(0, MAX_TEXT_CHARS))) {
    if (turn.role !== 'user') continue;
    const found = detectOptOut(turn.content);
    if (found.optOut) return found;
  }
  return { optOut: false };
}

function normalise(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\u2018\u2019\u02bc`\u00b4]/g, "'")
    .replace(/\bdo ?n'?t\b/g, 'do not')
    .replace(/\bdon'?t\b/g, 'do not')
    .replace(/\bwon'?t\b/g, 'will not')
    .replace(/[-_/]+/g, ' ');
}

function words(text: string): string[] {
  return text
    .split(/\s+/)
    .map((w) => trimApostrophes(w.replace(/[^\p{L}\p{N}']+/gu, '')))
    .filter((w) => w !== '');
}

/** A word without its leading and trailing apostrophes (a loop: /'+$/ retries from every apostrophe). */
function trimApostrophes(word: string): string {
  let start = 0;
  let end = word.length;
  while (start < end && word[start] === "'") start++;
  while (end > start && word[end - 1] === "'") end--;
  return word.slice(start, end);
}

function isOptOutClause(w: string[]): boolean {
  for (let i = 0; i < w.length; i++) {
    if (stopDoing(w, i) || doNotContact(w, i) || takeOffList(w, i) || keyword(w, i) || phrase(w, i))
      return true;
  }
  return false;
}

/** The length of a self object at `at` ("me", "us", "here", "my number", "this phone", "my phone number"); 0 if none. */
function selfObject(w: string[], at: number): number {
  const first = w[at];
  if (first === 'me' || first === 'us' || first === 'here') return 1;
  if (first === 'my' || first === 'this' || first === 'our' || first === 'that') {
    for (let k = 1; k <= 2; k++) if (PHONE_NOUNS.has(w[at + k] ?? '')) return k + 1;
  }
  return 0;
}

/** Nothing after `at` but words that keep a request unqualified ("again", "anymore", "please", "at all"). */
function plainTail(w: string[], at: number): boolean {
  for (let k = at; k < w.length; k++) {
    const word = w[k]!;
    if (word === 'at' && w[k + 1] === 'all') {
      k++;
      continue;
    }
    if (!TAIL_WORDS.has(word)) return false;
  }
  return true;
}

/** "stop calling (me|this number)", "quit calling", "stop the calls"; not "do not stop calling", "stop calling him". */
function stopDoing(w: string[], i: number): boolean {
  if (!STOP_VERBS.has(w[i]!)) return false;
  const before = w[i - 1] ?? '';
  if (NEGATIONS.has(before) || before === 'will' || before === "i'll" || before === "we'll") return false;
  const next = w[i + 1] ?? '';
  if (CONTACT_VERBS_ING.has(next)) {
    const at = i + 2;
    if (at >= w.length) return true;
    const object = selfObject(w, at);
    if (object > 0) return true;
    // "stop calling, please": a tail without an object; "stop calling him": someone else.
    return plainTail(w, at) && w[at] !== 'you';
  }
  // "stop the calls", "stop all these calls", "stop sending me texts".
  for (let k = i + 1; k <= i + 4 && k < w.length; k++) {
    if (CALL_NOUNS.has(w[k]!) && w[k] !== 'phone') return true;
    if (!['the', 'these', 'those', 'all', 'your', 'sending', 'me', 'with', 'of'].includes(w[k]!))
      return false;
  }
  return false;
}

/**
 * "do not call (me|us|this number) (again|anymore)", "do not call", "never call me again",
 * "put me on your do not call list"; not "do not call me before noon", "you never call me anymore".
 */
function doNotContact(w: string[], i: number): boolean {
  let k: number;
  if (w[i] === 'do' && w[i + 1] === 'not') k = i + 2;
  else if (w[i] === 'never') k = i + 1;
  else return false;
  if (SUBJECTS.has(w[i - 1] ?? '')) return false;
  while (w[k] === 'ever' || w[k] === 'you' || w[k] === 'please' || w[k] === 'ye') k++;
  if (!CONTACT_VERBS.has(w[k] ?? '')) return false;
  const at = k + 1;
  if (at >= w.length) return true;
  const next = w[at]!;
  if (LIST_NOUNS.has(next) || next === 'registry') return true;
  if (next === 'again' || next === 'anymore') return plainTail(w, at);
  const object = selfObject(w, at);
  return object > 0 && plainTail(w, at + object);
}

/** "take me off your list", "remove me from your list", "remove my number", "get my name off your call list". */
function takeOffList(w: string[], i: number): boolean {
  const verb = w[i]!;
  if (!TAKE_VERBS.has(verb)) return false;
  const object = selfObject(w, i + 1);
  if (object === 0 || w[i + 1] === 'here') return false;
  const at = i + 1 + object;
  // "remove my number" alone is the request; "take me" alone is not.
  if (REMOVE_VERBS.has(verb) && w[i + 1] !== 'me' && plainTail(w, at)) return true;
  const preposition = w[at];
  let from = at + 1;
  if (preposition === 'out' && w[at + 1] === 'of') from = at + 2;
  else if (preposition !== 'off' && preposition !== 'from') return false;
  for (let k = from; k < from + 4 && k < w.length; k++) if (LIST_NOUNS.has(w[k]!)) return true;
  return false;
}

/** "unsubscribe", "opt out", "opt me out"; not "I do not want to unsubscribe". */
function keyword(w: string[], i: number): boolean {
  const word = w[i]!;
  let hit = false;
  if (word === 'unsubscribe' || word === 'optout') hit = true;
  else if (word === 'opt' && (w[i + 1] === 'out' || (w[i + 2] === 'out' && selfObject(w, i + 1) > 0)))
    hit = true;
  if (!hit) return false;
  for (let k = Math.max(0, i - 4); k < i; k++) if (NEGATIONS.has(w[k]!)) return false;
  return true;
}

/**
 * Set phrases: "no more calls", "leave me alone", "lose my number", "do not want (any more)
 * calls", "do not want to be called", "do not want you calling me".
 */
function phrase(w: string[], i: number): boolean {
  const word = w[i]!;
  if (word === 'no' && w[i + 1] === 'more') {
    for (let k = i + 2; k <= i + 3 && k < w.length; k++) {
      if (CALL_NOUNS.has(w[k]!) && w[k] !== 'phone') return true;
      if (w[k] !== 'phone' && w[k] !== 'of' && w[k] !== 'these' && w[k] !== 'your') return false;
    }
    return false;
  }
  if (word === 'leave' && w[i + 1] === 'me' && w[i + 2] === 'alone') return true;
  if (word === 'lose' && selfObject(w, i + 1) > 1) return true;
  if (word === 'do' && w[i + 1] === 'not' && w[i + 2] === 'want') {
    let k = i + 3;
    let you = false;
    while (k < w.length && (WANT_FILLER.has(w[k]!) || w[k] === 'you')) {
      if (w[k] === 'you') you = true;
      k++;
    }
    const hitWord = w[k] ?? '';
    if (hitWord === 'calls' || hitWord === 'called' || hitWord === 'contacted' || hitWord === 'robocalls')
      return true;
    if (you && (CONTACT_VERBS.has(hitWord) || CONTACT_VERBS_ING.has(hitWord))) {
      const object = selfObject(w, k + 1);
      return object > 0 ? plainTail(w, k + 1 + object) : k + 1 >= w.length;
    }
    return false;
  }
  return false;
}
