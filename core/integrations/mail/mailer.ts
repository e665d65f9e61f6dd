import nodemailer, { type Transporter } from 'nodemailer';

// Outgoing email through SMTP (SMTP_URL, e.g. smtp://user:pass@host:587 or smtps://...), from
// MAIL_FROM. One pooled transport per process; callers record the send through the effect
// recorder, so a failed send is retried by its job and a sent one is never repeated.

export interface MailMessage {
  to: string[];
  subject: string;
  /** The plain-text body every client can read. */
  text: string;
  /** An HTML alternative; everything interpolated into it must already be escaped. */
  html?: string;
  /** Message-ID to use: derive it from the effect so a repeated send is recognisable. */
  messageId?: string;
  /** Abandons the exchange (its connection closed) when aborted. */
  signal?: AbortSignal;
}

export interface Mailer {
  send(message: MailMessage): Promise<{ messageId: string; accepted: string[] }>;
  close(): void;
}

export class SmtpMailer implements Mailer {
  private readonly transport: Transporter;

  constructor(
    smtpUrl: string,
    private readonly from: string,
  ) {
    const url = new URL(smtpUrl);
    const secure = url.protocol === 'smtps:';
    this.transport = nodemailer.createTransport({
      host: url.hostname,
      port: url.port === '' ? (secure ? 465 : 587) : Number(url.port),
      secure,
      ...(url.username === ''
        ? {}
        : { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } }),
      // Connections kept and reused (up to 5, 100 messages each): a mail does not pay for a
      // connection, a greeting and EHLO (and, over TLS, a handshake) of its own.
      // A connection that closes mid-message fails that message (whether it went is then the
      // effect recorder's to decide); the pool sends again, over a new connection, only a message
      // of which not a byte went out (a connection the server had dropped while idle).
      pool: true,
      // Bounded waits: a hanging server fails the attempt, and the job retries with backoff.
      connectionTimeout: 10_000,
      greetingTimeout: 10_000,
      socketTimeout: 20_000,
    });
  }

  async send(message: MailMessage): Promise<{ messageId: string; accepted: string[] }> {
    const info = await this.transport.sendMail({
      from: this.from,
      to: message.to,
      subject: message.subject,
      text: message.text,
      ...(message.html === undefined ? {} : { html: message.html }),
      ...(message.messageId === undefined ? {} : { messageId: message.messageId }),
      ...(message.signal === undefined ? {} : { signal: message.signal }),
    });
    return {
      messageId: String(info.messageId),
      accepted: (info.accepted as Array<string | { address: string }>).map((a) =>
        typeof a === 'string' ? a : a.address,
      ),
    };
  }

  close(): void {
    this.transport.close();
  }
}
