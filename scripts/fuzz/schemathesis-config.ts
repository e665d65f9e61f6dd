// The Schemathesis configuration (TOML) of one `npm run fuzz`, built from the seed data.
import { join } from 'node:path';
import type { Fixtures } from './seed-data.js';
import { FIRM, root } from './settings.js';

/** Names that have tripped JavaScript objects and MongoDB queries before. */
const TRICKY_NAMES = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  '__defineGetter__',
  '$where',
  '$ne',
  '..',
];

/**
 * Real values are mixed into the generated data so that requests get past "firm not found" and
 * "agent not found" into the handlers (half the time: the other half still asks for unknown
 * ones). Where the document says a value must be one the service issued (a voice of
 * list-voices, a cursor of list-calls), valid test cases always use one; a dictionary only feeds
 * test cases it is valid for, so invalid cases are still generated.
 */
export function configToml(f: Fixtures): string {
  const list = (values: string[]) => `[${values.map((v) => JSON.stringify(v)).join(', ')}]`;
  const bind = (dictionary: string, keys: string[], probability: number) =>
    keys.map((k) => `"${k}" = { dictionary = "${dictionary}", probability = ${probability} }`).join('\n');
  return [
    '# Written by scripts/fuzz/run.ts for one run.',
    `hooks = ${JSON.stringify(join(root, 'scripts', 'fuzz', 'hooks.py'))}`,
    '',
    `[dictionaries.firm]\nvalues = ${list([FIRM])}`,
    `[dictionaries.agent]\nvalues = ${list([f.agentId])}`,
    `[dictionaries.voice]\nvalues = ${list(f.voiceIds)}`,
    `[dictionaries.chat]\nvalues = ${list([f.chatId])}`,
    `[dictionaries.call]\nvalues = ${list(f.callIds)}`,
    `[dictionaries.cursor]\nvalues = ${list(['', f.cursor])}`,
    `[dictionaries.tricky]\nvalues = ${list(TRICKY_NAMES)}`,
    '',
    '[generation.dictionaries]',
    'string = { dictionary = "tricky", probability = 0.05 }',
    '',
    '[parameters]',
    bind('firm', ['path.slug', 'path.firm', 'query.firmSlug', 'body.firmSlug'], 0.5),
    bind('agent', ['path.agent_id', 'body.agentId'], 0.5),
    bind('chat', ['path.chat_id', 'body.chatId'], 0.5),
    bind('call', ['path.call_id'], 0.5),
    bind('voice', ['body.voice_id'], 1),
    bind('cursor', ['body.cursor'], 1),
    bind(
      'tricky',
      ['path.file', 'path.id', 'body.intake_questions[*].key', 'body.event', 'body.call.call_id'],
      0.2,
    ),
    '',
  ].join('\n');
}
