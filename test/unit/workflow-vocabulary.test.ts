// The workflow node vocabulary (core/domain/workflows/vocabulary.ts, expressions.ts): what makes an
// active graph unrunnable, structured conditions, templates, durations, local times. Pure.
import { describe, expect, it } from 'vitest';
import { conditionsHold, holds, render } from '../../core/domain/workflows/expressions.js';
import { valueAt } from '../../core/platform/own.js';
import {
  durationMs,
  eventMatches,
  isEventPattern,
  runnableProblems,
} from '../../core/domain/workflows/vocabulary.js';
import { nextLocalTime } from '../../core/domain/workflows/runs/steps.js';

const trigger = { id: 't', type: 'trigger.event', data: { event: 'lead.created' } };

describe('runnableProblems', () => {
  it('a runnable graph has none; unknown (UI) node types are not judged', () => {
    const nodes = [
      trigger,
      { id: 'n', type: 'note', data: {} },
      { id: 's', type: 'notify_slack', data: { text: 'hi' } },
    ];
    expect(runnableProblems(nodes, [{ id: 'e', source: 't', target: 's' }])).toEqual([]);
  });

  it('names each missing field by pointer and node id', () => {
    const nodes = [
      trigger,
      { id: 'm', type: 'send_email', data: { to: ['not-an-address'], subject: 'x' } },
      { id: 'c', type: 'call', data: {} },
      { id: 'w', type: 'wait', data: { duration: { days: 0 } } },
      { id: 'f', type: 'wait_for', data: { event: 'appointment.*' } },
      { id: 'h', type: 'webhook', data: { url: 'https://example.com/x', secret: 'whsec_eA==' } },
      { id: 'u', type: 'update_lead', data: {} },
    ];
    expect(runnableProblems(nodes, []).map((p) => p.path)).toEqual([
      '/nodes/1/data/to',
      '/nodes/1/data/body',
      '/nodes/2/data/agent_id',
      '/nodes/3/data/duration',
      '/nodes/4/data/within',
      '/nodes/5/data/endpoint_id',
      '/nodes/5/data/secret',
      '/nodes/6/data/status',
    ]);
  });

  it('a cycle is refused unless it passes through a wait or wait_for', () => {
    const loop = [
      trigger,
      { id: 'a', type: 'notify_slack', data: { text: 'a' } },
      { id: 'b', type: 'notify_slack', data: { text: 'b' } },
    ];
    const edges = [
      { id: '1', source: 't', target: 'a' },
      { id: '2', source: 'a', target: 'b' },
      { id: '3', source: 'b', target: 'a' },
    ];
    expect(runnableProblems(loop, edges)).toEqual([
      { path: '/nodes/1', message: expect.stringContaining('"a" → "b"') },
    ]);
    const waited = [...loop, { id: 'w', type: 'wait', data: { duration: { minutes: 5 } } }];
    const through = [
      edges[0]!,
      edges[1]!,
      { id: '3', source: 'b', target: 'w' },
      { id: '4', source: 'w', target: 'a' },
    ];
    expect(runnableProblems(waited, through)).toEqual([]);
  });

  it('branch edges name their handle; no trigger is a problem of its own', () => {
    const nodes = [
      { id: 'c', type: 'condition', data: { field: 'lead.email', operator: 'exists' } },
      { id: 'x', type: 'group' },
    ];
    expect(runnableProblems(nodes, [{ id: 'e', source: 'c', target: 'x' }]).map((p) => p.path)).toEqual([
      '/nodes',
      '/edges/0/sourceHandle',
    ]);
  });
});

describe('conditions and templates', () => {
  const root = { event: { data: { case_type: 'Personal Injury', n: '7', tags: ['vip'] } }, lead: null };

  it('walks own properties only, and compares text without case', () => {
    expect(valueAt(root, 'event.data.case_type')).toBe('Personal Injury');
    expect(valueAt(root, 'event.data.constructor')).toBeUndefined();
    expect(valueAt(root, 'lead.name')).toBeUndefined();
    expect(holds({ field: 'event.data.case_type', operator: 'equals', value: 'personal injury' }, root)).toBe(
      true,
    );
    expect(holds({ field: 'event.data.n', operator: 'gt', value: 5 }, root)).toBe(true);
    expect(holds({ field: 'event.data.tags', operator: 'contains', value: 'VIP' }, root)).toBe(true);
    expect(holds({ field: 'event.data.case_type', operator: 'in', value: ['Family Law'] }, root)).toBe(false);
    expect(holds({ field: 'lead.appointment', operator: 'not_exists' }, root)).toBe(true);
  });

  it('a list of conditions holds all, or any with match: any', () => {
    const list = [
      { field: 'case_type', operator: 'equals', value: 'Personal Injury' },
      { field: 'n', operator: 'lt', value: 3 },
    ];
    expect(conditionsHold({ filter: list }, 'filter', root.event.data)).toBe(false);
    expect(conditionsHold({ filter: { conditions: list, match: 'any' } }, 'filter', root.event.data)).toBe(
      true,
    );
    expect(conditionsHold({}, 'filter', root.event.data)).toBe(true);
  });

  it('renders {{paths}}; missing is empty; nothing is evaluated', () => {
    expect(render('Case: {{ event.data.case_type }} / {{lead.name}} / {{process.env}}', root)).toBe(
      'Case: Personal Injury /  / ',
    );
  });
});

describe('durations, event patterns and local times', () => {
  it('reads durations and event groups', () => {
    expect(durationMs({ days: 1, hours: 2 })).toBe(93_600_000);
    expect(durationMs({ days: -1 })).toBeNull();
    expect(durationMs({ days: 400 })).toBeNull();
    expect(isEventPattern('appointment.*')).toBe(true);
    expect(isEventPattern('nothing.*')).toBe(false);
    expect(eventMatches('appointment.*', 'appointment.booked')).toBe(true);
    expect(eventMatches('call.analyzed', 'call.ended')).toBe(false);
  });

  it('the next 09:00 in a zone, across a daylight-saving change', () => {
    // 2026-11-01 is the end of DST in New York: 09:00 EST is 14:00 UTC.
    const before = Date.parse('2026-11-01T05:00:00Z');
    expect(new Date(nextLocalTime(before, 9 * 60, 'America/New_York')).toISOString()).toBe(
      '2026-11-01T14:00:00.000Z',
    );
    const after = Date.parse('2026-11-01T15:00:00Z');
    expect(new Date(nextLocalTime(after, 9 * 60, 'America/New_York')).toISOString()).toBe(
      '2026-11-02T14:00:00.000Z',
    );
  });
});
