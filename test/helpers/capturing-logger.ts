import { Writable } from 'node:stream';
import { pino } from 'pino';

/** A pino logger whose JSON lines are kept, parsed, in `lines` (to assert what was logged). */
export function capturingLogger() {
  const lines: Array<{ level: number; msg: string; policy?: string; node?: string }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  return { log: pino({ level: 'info' }, stream), lines };
}
