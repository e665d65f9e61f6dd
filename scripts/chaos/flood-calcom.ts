import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isoInZone } from '../../test/fakes/calcom-server.js';

// The flood firm's Cal.com: GET /v2/slots answered as Cal.com 2024-09-04 answers it
// ({status: "success", data: {<date in timeZone>: [{start}]}}, the same shape as the Cal.com fake
// of test/fakes/calcom-server.ts), with a slot every minute: about 1 MiB for 14 days. Each time
// zone's slots are formatted once, so that 80 such answers do not hold the driver's event loop
// (the spec-checked fake formats and checks every answer: seconds each under load).

export const FLOOD_CALCOM = { apiKey: 'cal_live_chaos_flood_0123456789', eventTypeId: 9090 };
const DAY_MS = 86_400_000;

export interface FloodCalcom {
  url: string;
  /** Slots answers given. */
  answered: number;
  stop(): Promise<void>;
}

export async function startFloodCalcom(): Promise<FloodCalcom> {
  const first = Math.ceil(Date.now() / DAY_MS) * DAY_MS + DAY_MS;
  const slots = Array.from({ length: 40 * 1440 }, (_, i) => first + i * 60_000);
  const byZone = new Map<string, Array<{ ms: number; start: string }>>();
  const formatted = (timeZone: string) => {
    let list = byZone.get(timeZone);
    if (list === undefined) {
      list = slots.map((ms) => ({ ms, start: isoInZone(ms, timeZone) }));
      byZone.set(timeZone, list);
    }
    return list;
  };
  const state = { answered: 0 };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://flood.local');
    const send = (status: number, body: unknown) =>
      res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
    if (req.method !== 'GET' || url.pathname !== '/v2/slots')
      return send(404, { status: 'error', error: { code: 'NotFoundException', message: 'Not found' } });
    if (req.headers.authorization !== `Bearer ${FLOOD_CALCOM.apiKey}`)
      return send(401, {
        status: 'error',
        error: { code: 'UnauthorizedException', message: 'Invalid API key' },
      });
    const from = Date.parse(url.searchParams.get('start') ?? '');
    const to = Date.parse(url.searchParams.get('end') ?? '');
    const timeZone = url.searchParams.get('timeZone') ?? 'UTC';
    const data: Record<string, Array<{ start: string }>> = {};
    for (const slot of formatted(timeZone)) {
      if (slot.ms < from || slot.ms > to) continue;
      (data[slot.start.slice(0, 10)] ??= []).push({ start: slot.start });
    }
    state.answered += 1;
    return send(200, { status: 'success', data });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get answered() {
      return state.answered;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
