// docs/events.md#event-types holds together with the code: a section for every event type, and
// each section's example body `{type, timestamp, data}` conforms to its type's schema
// (api/schemas/events.ts, every object closed); the schema refuses what a receiver must not get.
// Pure: reads a file, starts nothing.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../core/domain/events/event-types.js';
import { eventBodyProblems } from '../../api/schemas/events.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const docs = readFileSync(resolve(root, 'docs/events.md'), 'utf8');

/** The `### \`type\`` sections of "## Event types", each with the body of its one json block. */
function documentedExamples(): Map<string, unknown[]> {
  const start = docs.indexOf('\n## Event types\n');
  expect(start, 'docs/events.md has a "## Event types" section').toBeGreaterThan(0);
  const rest = docs.slice(start + 1);
  const next = rest.slice(1).search(/\n## /);
  const section = next === -1 ? rest : rest.slice(0, next + 1);
  const examples = new Map<string, unknown[]>();
  for (const part of section.split(/\n### /).slice(1)) {
    const type = /^`([^`]+)`/.exec(part)?.[1] ?? part.split('\n')[0]!;
    const blocks = [...part.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!) as unknown);
    examples.set(type, blocks);
  }
  return examples;
}

describe('docs/events.md#event-types', () => {
  const examples = documentedExamples();

  it('has a section for every event type and none for a type the service does not send', () => {
    expect([...examples.keys()].sort()).toEqual([...EVENT_TYPES].sort());
  });

  it.each([...EVENT_TYPES])('%s: one example body, of its type, conforming to its schema', (type) => {
    const bodies = examples.get(type) ?? [];
    expect(bodies).toHaveLength(1);
    const body = bodies[0] as { type: string };
    expect(body.type).toBe(type);
    expect(eventBodyProblems(body)).toEqual([]);
  });
});

describe('the event schemas refuse what no event carries', () => {
  const example = (type: string) => structuredClone(documentedExamples().get(type)![0]) as any;

  it('a field the record does not have, a missing one, a wrong type, an unknown event type', () => {
    const call = example('call.analyzed');
    call.data.provider_secret = 'x';
    expect(eventBodyProblems(call)).toEqual(['/data must NOT have additional properties: provider_secret']);
    const lead = example('lead.created');
    delete lead.data.firm;
    expect(eventBodyProblems(lead)).toEqual(["/data must have required property 'firm'"]);
    const appointment = example('appointment.booked');
    appointment.data.status = 'cancelled';
    expect(eventBodyProblems(appointment)).toEqual(['/data/status must be equal to constant']);
    const dnc = example('dnc.added');
    dnc.timestamp = 'yesterday';
    expect(eventBodyProblems(dnc)).toEqual(['/timestamp must match format "date-time"']);
    expect(eventBodyProblems({ ...example('dnc.added'), type: 'dnc.removed' })).toEqual([
      '/type is not an event type: "dnc.removed"',
    ]);
  });
});
