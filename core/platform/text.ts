/** One line of at most `max` characters: white space collapsed, an ellipsis where it was cut. */
export function shorten(text: string, max: number): string {
  const flat = singleLine(text).replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1).trimEnd()}…`;
}

// Every way text can start a new line (CR, LF, NEL U+0085, VT, FF, LS U+2028, PS U+2029) and the
// other control characters: in a field meant to be one line they let whoever wrote it forge lines
// of a plain-text mail, a Slack message or a log (docs/webhooks.md#caller-text).
const BREAKS_AND_CONTROLS = /[\p{Cc}\p{Zl}\p{Zp}]+/gu;

/** `text` as one line: each run of line breaks and control characters becomes one space. */
export function singleLine(text: string): string {
  return text.replace(BREAKS_AND_CONTROLS, ' ');
}
