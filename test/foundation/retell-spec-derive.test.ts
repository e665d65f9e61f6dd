// test/fakes/spec/retell.json is what `npm run providers:derive` makes of the installed retell-sdk
// (scripts/providers/retell.ts): deriving it again gives the committed file, byte for byte.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { deriveRetell, mergeInterfaces } from '../../scripts/providers/retell.js';

const root = join(import.meta.dirname, '..', '..');

describe('the Retell document', () => {
  it('re-derived from retell-sdk’s types is the committed one', { timeout: 120_000 }, () => {
    const committed = readFileSync(join(root, 'test', 'fakes', 'spec', 'retell.json'), 'utf8');
    expect(`${JSON.stringify(deriveRetell(root), null, 1)}\n`).toBe(committed);
  });

  it('an interface the SDK declares twice in one scope is read merged, as TypeScript merges it', () => {
    const text = [
      'export declare namespace A {',
      '    interface F {',
      '        op: string;',
      '    }',
      '    interface G {',
      '        x: number;',
      '    }',
      '    interface F {',
      '        op: string;',
      '        key?: string;',
      '    }',
      '}',
    ].join('\n');
    const merged = mergeInterfaces('a.d.ts', text);
    expect(merged.match(/interface F/g)).toHaveLength(1);
    expect(merged).toMatch(/interface F \{\s+op: string;\s+key\?: string;\s+\}/);
    expect(merged).toContain('interface G');
  });
});
