import type { AddressInfo, Socket } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { answerDelay, type Latency } from './latency.js';

// A real SMTP server (smtp-server) on 127.0.0.1 that keeps every message it accepts, for tests
// that check what the service mailed. Point the service at it with SMTP_URL=smtp://127.0.0.1:<port>.

export interface ReceivedMail {
  from: string;
  to: string[];
  /** The raw RFC 5322 message: headers and body as sent. */
  raw: string;
  /** Header value (first occurrence, unfolded), case-insensitive name. */
  header(name: string): string | undefined;
  /** When the server accepted it (ms since epoch). */
  at: number;
}

export interface FakeSmtp {
  url: string;
  messages: ReceivedMail[];
  /** Refuse the next `n` messages with a temporary 451 (the sender should retry). */
  failNext(n: number): void;
  /**
   * Drop the connection of the next `n` messages once their data has arrived, with no reply (a
   * server that died, a network cut): the sender cannot know whether they went; none is kept.
   */
  dropNext(n: number): void;
  /**
   * Drop the connection at the next `n` messages' MAIL FROM, with no reply (a relay that closed a
   * kept connection just as it was used): not a byte of those messages arrived.
   */
  dropAtEnvelopeNext(n: number): void;
  /**
   * A slow server: messages received from now on get no reply until the returned function is
   * called (then they are accepted, or refused as `failNext` says).
   */
  hold(): () => void;
  /** Messages received and waiting for their reply (while held). */
  held(): number;
  /** SMTP connections clients opened so far. */
  connections(): number;
  stop(): Promise<void>;
}

function headerOf(raw: string, name: string): string | undefined {
  const head = raw.split(/\r?\n\r?\n/, 1)[0] ?? '';
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  const wanted = name.toLowerCase();
  for (const line of unfolded.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === wanted)
      return line.slice(colon + 1).trim();
  }
  return undefined;
}

/** A header's RFC 2047 encoded words (=?UTF-8?Q?...?= / =?UTF-8?B?...?=) as text. */
export function decodeHeader(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?UTF-8\?([QB])\?([^?]*)\?=/gi, (_, kind: string, text: string) =>
      kind.toUpperCase() === 'B'
        ? Buffer.from(text, 'base64').toString('utf8')
        : Buffer.from(
            text
              .replace(/_/g, ' ')
              .replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
            'latin1',
          ).toString('utf8'),
    );
}

/** The text of a single-part mail, decoded from its transfer encoding. */
export function bodyText(mail: ReceivedMail): string {
  const split = mail.raw.search(/\r?\n\r?\n/);
  const body = mail.raw.slice(split).replace(/^\r?\n\r?\n/, '');
  const encoding = (mail.header('content-transfer-encoding') ?? '7bit').toLowerCase();
  if (encoding === 'base64') return Buffer.from(body, 'base64').toString('utf8');
  if (encoding === 'quoted-printable') {
    const bytes = body
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-F]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    return Buffer.from(bytes, 'latin1').toString('utf8');
  }
  return body;
}

export async function startFakeSmtp(options: { latency?: Latency } = {}): Promise<FakeSmtp> {
  const messages: ReceivedMail[] = [];
  let failures = 0;
  let holding = false;
  let connections = 0;
  let drops = 0;
  let envelopeDrops = 0;
  /** The sockets of the connections open now, by session id. */
  const sockets = (): Map<string, Socket> =>
    new Map(
      [...(server as unknown as { connections: Set<{ id: string; _socket: Socket }> }).connections].map(
        (c) => [c.id, c._socket],
      ),
    );
  const waiting: Array<() => void> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onConnect(_session, callback) {
      connections++;
      callback();
    },
    onMailFrom(_address, session, callback) {
      if (envelopeDrops === 0) return callback();
      envelopeDrops--;
      sockets().get(session.id)?.destroy();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      // The latency is the server's answer to the message (after its DATA), what a relay takes.
      const answer = () => {
        if (holding) return void waiting.push(() => reply());
        reply();
      };
      stream.on('end', () => {
        if (drops > 0) {
          drops--;
          sockets().get(session.id)?.destroy();
          return;
        }
        if (options.latency === undefined) answer();
        else void answerDelay(options.latency).then(answer);
      });
      const reply = () => {
        if (failures > 0) {
          failures--;
          const err = Object.assign(new Error('Try again later'), { responseCode: 451 });
          return callback(err);
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        const envelope = session.envelope;
        messages.push({
          from: envelope.mailFrom === false ? '' : envelope.mailFrom.address,
          to: envelope.rcptTo.map((r) => r.address),
          raw,
          header: (name) => headerOf(raw, name),
          at: Date.now(),
        });
        callback();
      };
    },
  });
  // A client that goes away mid-session (a worker process SIGKILLed while it sends, as the chaos
  // tests do) is a connection error that smtp-server emits on the server: a real server logs it
  // and serves the next client, and so does this one (unlistened, it would be an uncaught
  // exception in the test process: "read ECONNRESET").
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    failNext: (n) => {
      failures = n;
    },
    dropNext: (n) => {
      drops = n;
    },
    dropAtEnvelopeNext: (n) => {
      envelopeDrops = n;
    },
    hold: () => {
      holding = true;
      return () => {
        holding = false;
        for (const run of waiting.splice(0)) run();
      };
    },
    held: () => waiting.length,
    connections: () => connections,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
