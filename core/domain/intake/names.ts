// A person's name in what they said or typed.
//
// Every pattern here is linear on any text (docs/webhooks.md#linear-text-scanning): a trailing
// run (/[.,]+$/) starts only where its run starts (the lookbehind), else the engine would try
// from every character of a long run and scan the rest of it each time.
import { EMAIL } from '../contact-points/emails.js';

// Words that follow "I'm" or stand in a short answer but are not names.
const NOT_NAME = new Set(
  (
    'a an the and or but so i im me my mine you your we our they he she it its this that is are was were be ' +
    'been being am have has had do does did dont don’t not no yes yeah yep nope ok okay sure hi hello hey ' +
    'thanks thank please sorry just really very here there calling looking trying writing reaching ' +
    'interested injured hurt scared worried afraid fine good glad happy going getting having need want ' +
    'know unsure what why how who when where which in at on with from about for to of by as if then than ' +
    'lawyer attorney help legal email phone number name case call text message married divorced ' +
    'arrested pregnant unemployed homeless new old still also again anonymous unknown none n/a na skip ' +
    'urgent important regarding'
  ).split(' '),
);

const NAME_TOKEN = /^\p{L}[\p{L}'’.-]*$/u;

function isNameToken(token: string): boolean {
  return NAME_TOKEN.test(token) && !NOT_NAME.has(token.toLowerCase().replace(/(?<!\.)\.+$/, ''));
}

function capitalise(token: string): string {
  if (token !== token.toLowerCase() && token !== token.toUpperCase()) return token;
  return token
    .toLowerCase()
    .replace(/(^|[-'’])(\p{L})/gu, (_m, sep: string, letter: string) => sep + letter.toUpperCase());
}

function formatName(tokens: string[]): string {
  return tokens.map((t) => capitalise(t.replace(/(?<![.,])[.,]+$/, ''))).join(' ');
}

/** Name tokens at the start of `rest`, up to four; `capitalised` requires each to start upper-case. */
function leadingNameTokens(rest: string, capitalised: boolean): string[] {
  const tokens: string[] = [];
  for (const raw of rest.split(/\s+/)) {
    const token = raw.replace(/(?<![,;:!?])[,;:!?]+$/, '');
    if (token === '' || !isNameToken(token)) break;
    if (capitalised && !/^\p{Lu}/u.test(token)) break;
    tokens.push(token);
    if (tokens.length === 4 || raw !== token) break; // punctuation ends the name
  }
  return tokens;
}

/**
 * A person's name in free text: "my name is jane doe", "I'm Jane", "this is Jane Doe", "call me
 * Jane". With `bare`, a short answer that is only a name ("Jane Doe", "jane") counts too: use it
 * for replies to a name question. Returns the name formatted, or null.
 */
export function extractName(text: string, options: { bare?: boolean } = {}): string | null {
  // Explicit: the words after "my name is" in any case.
  const explicit = /\b(?:my\s+name\s+is|my\s+name['’]s|name\s+is|name['’]s)\s+(.+)/i.exec(text);
  if (explicit?.[1] !== undefined) {
    const tokens = leadingNameTokens(explicit[1], false);
    if (tokens.length > 0) return formatName(tokens);
  }
  // Introductions: only capitalised words, so "I'm calling about" or "this is urgent" are not names.
  const intro = /(?:^|[\s,.!?])(?:i\s+am|i['’]m|this\s+is|call\s+me|it['’]s|it\s+is)\s+(.+)/i.exec(text);
  if (intro?.[1] !== undefined) {
    const tokens = leadingNameTokens(intro[1], true);
    if (tokens.length > 0) return formatName(tokens);
  }
  if (options.bare !== true) return null;
  // A bare answer: drop contact details and edge punctuation; 1–4 name words and nothing else.
  const stripped = text
    .replace(/^\s*(?:(?:sure|yes|yeah|yep|ok|okay|um+|uh+|well|hi|hello|hey)\b[\s,.!-]*)+/i, '')
    .replace(EMAIL, ' ')
    .replace(/\+?\d[\d\s().-]{5,}\d/g, ' ')
    .replace(/^[\s,.;:!?-]+|(?<![\s,.;:!?-])[\s,.;:!?-]+$/g, '')
    .trim();
  const tokens = stripped.split(/[\s,]+/).filter((t) => t !== '');
  if (tokens.length === 0 || tokens.length > 4 || !tokens.every(isNameToken)) return null;
  return formatName(tokens);
}

export function splitName(name: string | null): { first_name: string | null; last_name: string | null } {
  if (name === null) return { first_name: null, last_name: null };
  const [first, ...rest] = name.split(/\s+/);
  return { first_name: first ?? null, last_name: rest.length > 0 ? rest.join(' ') : null };
}
