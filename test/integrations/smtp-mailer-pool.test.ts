// The mailer's connections (core/integrations/mail/mailer.ts): kept and reused, so a mail does not
// pay for a connection, a greeting and EHLO of its own; a mail whose kept connection drops before
// a byte of it went goes over a new one; and a connection that drops mid-message fails that
// message rather than sending it again on another (whether it went is the effect recorder's to
// decide). Against a real SMTP server on 127.0.0.1 (test/fakes/smtp-server.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SmtpMailer } from '../../core/integrations/mail/mailer.js';
import { startFakeSmtp, type FakeSmtp } from '../fakes/smtp-server.js';

let smtp: FakeSmtp;
beforeAll(async () => {
  smtp = await startFakeSmtp();
});
afterAll(() => smtp?.stop());

const received = (subject: string) => smtp.messages.filter((m) => m.header('subject') === subject);

describe('the mailer', () => {
  it('sends mail after mail over one connection', async () => {
    const mailer = new SmtpMailer(smtp.url, 'Intake <no-reply@intake.test>');
    try {
      const before = smtp.connections();
      for (const n of [1, 2, 3]) {
        const sent = await mailer.send({ to: ['desk@firm.test'], subject: `pooled ${n}`, text: 'T' });
        expect(sent.accepted).toEqual(['desk@firm.test']);
      }
      for (const n of [1, 2, 3]) expect(received(`pooled ${n}`)).toHaveLength(1);
      expect(smtp.connections() - before).toBe(1);
    } finally {
      mailer.close();
    }
  });

  it('sends a mail over a new connection when its kept one drops before a byte of it went', async () => {
    const mailer = new SmtpMailer(smtp.url, 'Intake <no-reply@intake.test>');
    try {
      await mailer.send({ to: ['desk@firm.test'], subject: 'before the envelope drop', text: 'T' });
      const before = smtp.connections();
      smtp.dropAtEnvelopeNext(1);
      const sent = await mailer.send({
        to: ['desk@firm.test'],
        subject: 'after the envelope drop',
        text: 'T',
      });
      expect(sent.accepted).toEqual(['desk@firm.test']);
      expect(received('after the envelope drop')).toHaveLength(1);
      expect(smtp.connections()).toBe(before + 1);
    } finally {
      mailer.close();
    }
  });

  it('fails a message whose connection dropped before the answer, sends it nowhere else, and goes on', async () => {
    const mailer = new SmtpMailer(smtp.url, 'Intake <no-reply@intake.test>');
    try {
      await mailer.send({ to: ['desk@firm.test'], subject: 'before the drop', text: 'T' });
      const before = smtp.connections();
      smtp.dropNext(1);
      const failed = await mailer
        .send({ to: ['desk@firm.test'], subject: 'dropped', text: 'T' })
        .catch((err: unknown) => err);
      expect(failed).toBeInstanceOf(Error);
      // No SMTP reply code: the effect recorder takes it as "may have happened" (call-effects.ts).
      expect((failed as { responseCode?: unknown }).responseCode).toBeUndefined();
      // Not sent again on another connection by the pool.
      expect(smtp.connections()).toBe(before);
      // The next mail opens a new connection and goes.
      await mailer.send({ to: ['desk@firm.test'], subject: 'after the drop', text: 'T' });
      expect(received('after the drop')).toHaveLength(1);
      expect(smtp.connections()).toBe(before + 1);
      expect(received('dropped')).toHaveLength(0);
    } finally {
      mailer.close();
    }
  });
});
