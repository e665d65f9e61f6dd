/** One line of at most `max` characters: white space collapsed, an ellipsis where it was cut. */
export function shorten(text: string, max: number): string {
  // Only the first characters can show, so only a prefix is flattened: longer each time, until
  // its flat form holds more than `max` or it is the whole text. The flat form of a prefix is a
  // prefix of the whole's (each run becomes one space wherever it is cut; the start is trimmed
  // alike), so the answer is the same, for work about `max` and not the text's length (a Cal.com
  // booking with thirteen 200,000-character fields cost 50 ms to snapshot, each kept to 320 at most).
  for (let take = Math.max(64, 2 * max); ; take *= 4) {
    const whole = take >= text.length;
    const flat = flatten(whole ? text : text.slice(0, take));
    if (flat.length > max) return `${flat.slice(0, max - 1).trimEnd()}…`;
    if (whole) return flat;
  }
}

const flatten = (text: string): string => singleLine(text).replace(/\s+/g, ' ').trim();

// Every way text can start a new line (CR, LF, NEL U+0085, VT, FF, LS U+2028, PS U+2029) and the
// other control characters: in a field meant to be one line they let whoever wrote it forge lines
// of a plain-text mail, a Slack message or a log (docs/webhooks.md#caller-text).
const BREAKS_AND_CONTROLS = /[\p{Cc}\p{Zl}\p{Zp}]+/gu;

/** `text` as one line: each run of line breaks and control characters becomes one space. */
export function singleLine(text: string): string {
  return text.replace(BREAKS_AND_CONTROLS, ' ');
}

/**
 * `text` with each NUL character as U+FFFD: text from outside (an answer's body) that is stored,
 * since PostgreSQL-backed stores refuse a document holding NUL.
 */
export function storableText(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
}
