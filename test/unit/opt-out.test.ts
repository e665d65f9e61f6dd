// Opt-outs said or written by the person (core/domain/compliance/opt-out.ts): the phrase corpus
// (test/data/opt-out-corpus.json) is the specification — every opt-out detected, no look-alike —
// and only the person's own turns of a transcript count.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { detectOptOut, detectOptOutInTranscript } from '../../core/domain/compliance/opt-out.js';

const corpus = JSON.parse(readFileSync(new URL('../data/opt-out-corpus.json', import.meta.url), 'utf8')) as {
  opt_outs: string[];
  look_alikes: string[];
};

describe('the opt-out phrase corpus', () => {
  it('holds at least 30 opt-outs and 30 look-alikes', () => {
    expect(corpus.opt_outs.length).toBeGreaterThanOrEqual(30);
    expect(corpus.look_alikes.length).toBeGreaterThanOrEqual(30);
    console.log(
      `opt-out corpus: ${corpus.opt_outs.length} opt-outs, ${corpus.look_alikes.length} look-alikes`,
    );
  });

  it.each(corpus.opt_outs)('detects the opt-out %j', (text) => {
    const found = detectOptOut(text);
    expect(found.optOut).toBe(true);
    if (found.optOut) expect(found.words.length).toBeGreaterThan(0);
  });

  it.each(corpus.look_alikes)('does not take the look-alike %j for an opt-out', (text) => {
    expect(detectOptOut(text)).toEqual({ optOut: false });
  });
});

describe('the words kept as evidence', () => {
  it('are the clause that opted out, as written', () => {
    expect(detectOptOut("Thanks for the call. Please stop calling me, I'm not interested.")).toEqual({
      optOut: true,
      words: 'Please stop calling me',
    });
  });
});

describe('transcripts: only the person’s turns count', () => {
  it('finds the opt-out in a User turn', () => {
    const transcript =
      'Agent: Hello, this is the intake line of Smith & Co.\nUser: Please stop calling me.\nAgent: Understood.\n';
    expect(detectOptOutInTranscript(transcript)).toEqual({ optOut: true, words: 'Please stop calling me' });
  });

  it('finds an opt-out said at the end of a long call, past the first 20,000 characters', () => {
    const turn = (i: number) =>
      `Agent: Question ${i}, what happened next?\nUser: Then we went to the store and I waited for a while.\n`;
    let transcript = '';
    for (let i = 0; transcript.length < 150_000; i++) transcript += turn(i);
    transcript += 'User: Please stop calling me.\nAgent: Understood, goodbye.\n';
    expect(transcript.length).toBeGreaterThan(150_000);
    expect(detectOptOutInTranscript(transcript)).toEqual({ optOut: true, words: 'Please stop calling me' });
  });

  it('finds an opt-out at the end of one long turn of the person', () => {
    const transcript = `Agent: Tell me what happened.\nUser: ${'and then it rained '.repeat(3_000)}. Stop calling me.\n`;
    expect(transcript.length).toBeGreaterThan(50_000);
    expect(detectOptOutInTranscript(transcript)).toEqual({ optOut: true, words: 'Stop calling me' });
  });

  it('ignores the same words said by the agent', () => {
    const transcript =
      'Agent: If you want us to stop calling you, say "stop calling me" or "take me off your list".\n' +
      'User: No, call me again next week.\nAgent: Will do.\n';
    expect(detectOptOutInTranscript(transcript)).toEqual({ optOut: false });
  });
});
