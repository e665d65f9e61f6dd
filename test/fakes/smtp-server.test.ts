// The fake SMTP server outlives a client that goes away mid-session, as a real one does: the
// chaos tests SIGKILL workers while they send mail, and an unlistened connection error would be
// an uncaught exception in the test process.
import { connect } from 'node:net';
import { createTransport } from 'nodemailer';
import { afterAll, describe, expect, it } from 'vitest';
import { startFakeSmtp, type FakeSmtp } from './smtp-server.js';

let smtp: FakeSmtp | undefined;
afterAll(async () => {
  await smtp?.stop();
});

const uncaught: Error[] = [];
const record = (err: Error) => void uncaught.push(err);

describe('the fake SMTP server', () => {
  it('serves the next client after three were reset mid-session', async () => {
    process.on('uncaughtException', record);
    try {
      smtp = await startFakeSmtp();
      const port = Number(new URL(smtp.url).port);
      for (let i = 0; i < 3; i++) {
        await new Promise<void>((resolve, reject) => {
          const socket = connect(port, '127.0.0.1');
          socket.once('error', reject);
          // Inside a transaction (after MAIL FROM was taken), where smtp-server reports a reset
          // as an error rather than a client that merely hung up: reset once the 250 is read.
          let said = '';
          let greeted = false;
          socket.on('data', (chunk: Buffer) => {
            said += chunk.toString('latin1');
            if (!greeted && said.startsWith('220 ')) {
              greeted = true;
              socket.write('EHLO client.example\r\nMAIL FROM:<a@example.com>\r\n');
            }
            // The last line of the EHLO answer, then MAIL FROM's: both "250 ".
            if ((said.match(/^250 /gm) ?? []).length === 2) {
              socket.resetAndDestroy();
              resolve();
            }
          });
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      await createTransport({ url: smtp.url }).sendMail({
        from: 'a@example.com',
        to: 'b@example.com',
        subject: 'after the resets',
        text: 'still here',
      });
      expect(smtp.messages.map((m) => m.header('subject'))).toEqual(['after the resets']);
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', record);
    }
  });
});
