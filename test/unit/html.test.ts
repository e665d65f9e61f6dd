// escapeHtml (core/platform/html.ts): what notification emails put around every value a caller
// or a firm chose (names, summaries, links).
import { describe, expect, it } from 'vitest';
import { escapeHtml } from '../../core/platform/html.js';

describe('escapeHtml', () => {
  it('escapes the five characters that end text or a quoted attribute', () => {
    expect(escapeHtml(`<a href="x" onclick='y'>Tom & Jerry</a>`)).toBe(
      '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;Tom &amp; Jerry&lt;/a&gt;',
    );
  });

  it('escapes an ampersand that already starts an entity, so the text shows as written', () => {
    expect(escapeHtml('&amp; &#60;')).toBe('&amp;amp; &amp;#60;');
  });

  it('leaves other text alone, unicode included', () => {
    expect(escapeHtml('')).toBe('');
    expect(escapeHtml('José Müller — ⚖️ 100% \\ / `x`')).toBe('José Müller — ⚖️ 100% \\ / `x`');
  });

  it('leaves no way out of an attribute or into a tag', () => {
    const attack = `"><script>alert(1)</script><img src=x onerror='alert(2)'>`;
    const escaped = escapeHtml(attack);
    expect(escaped).not.toMatch(/[<>"']/);
    expect(escaped).toBe(
      '&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&#39;alert(2)&#39;&gt;',
    );
  });
});
