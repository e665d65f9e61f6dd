// Bull Board and job data (docs/operations.md#bull-board): the board must not rewrite a job's data (a
// reminder job was given another firm's data through PATCH …/:jobId/update-data), and only the platform key
// itself opens it: a platform session JWT (firm "*") is refused. Real HTTP against the board.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signSessionToken } from '../../core/domain/access/session.js';
import { QUEUE } from '../../jobs/queues.js';
import type { ApiResponse } from '../helpers/client.js';
import { expectError } from '../helpers/expect-error.js';
import { startStack, type Stack } from '../helpers/stack.js';

const BOARD = '/admin/queues';
const Q = QUEUE.bookings; // no worker runs in this file: the delayed job stays as it is put

let stack: Stack;
let jobId: string;
const ORIGINAL = { kind: 'reminder', firm: 'firm-a', to: 'client@a.example', booking_uid: 'bk-1' };

beforeAll(async () => {
  stack = await startStack();
  const job = await stack.services.queues[Q].add('reminder', ORIGINAL, { delay: 3_600_000 });
  jobId = job.id!;
});
afterAll(async () => stack?.stop());

const basic = (password: string) => `Basic ${Buffer.from(`operator:${password}`).toString('base64')}`;

/** A request as the board's own page sends it: own origin, JSON. */
function board(authorization: string, method: string, path: string, body?: unknown): Promise<ApiResponse> {
  return stack.api.request(method, `${BOARD}${path}`, {
    headers: { Authorization: authorization, Origin: stack.baseUrl },
    ...(body === undefined ? {} : { body }),
  });
}

async function expectDataUnchanged(): Promise<void> {
  const job = await stack.services.queues[Q].getJob(jobId);
  expect(job?.data).toEqual(ORIGINAL);
}

describe('Bull Board refuses job data edits and platform sessions', () => {
  it("PATCH …/:jobId/update-data is 403 for the platform key, and the job's data stays", async () => {
    const forged = { data: { ...ORIGINAL, firm: 'firm-b', to: 'attacker@b.example' } };
    const paths = [
      `/api/queues/${Q}/${jobId}/update-data`,
      `/api/queues/${Q}/${jobId}/UPDATE-DATA`, // the board's router matches paths case-insensitively
      `/api/queues/${Q}/${encodeURIComponent(jobId)}/update%2Ddata`,
      `/api/queues/${Q}/${jobId}/update-data/`,
      `//api/queues/${Q}/${jobId}/update-data`,
    ];
    for (const auth of [basic(stack.config.adminApiKey), `Bearer ${stack.config.adminApiKey}`]) {
      for (const path of paths) {
        const res = await board(auth, 'PATCH', path, forged);
        expect({ path, status: res.status }).toEqual({ path, status: 403 });
        expectError(res, 403, 'forbidden');
      }
    }
    await expectDataUnchanged();
  });

  it('the other job edits an operator needs still work (the job is rescheduled)', async () => {
    const before = (await stack.services.queues[Q].getJob(jobId))!.delay;
    const res = await board(basic(stack.config.adminApiKey), 'PATCH', `/api/queues/${Q}/${jobId}/delay`, {
      runAt: Date.now() + 7_200_000,
    });
    expect(res.status).toBe(200);
    expect((await stack.services.queues[Q].getJob(jobId))!.delay).toBeGreaterThan(before);
    await expectDataUnchanged();
  });

  it('a platform session JWT (firm "*") is 403 as bearer and 401 as basic-auth password', async () => {
    const session = await signSessionToken({ firm: '*', sub: 'ops-1' }, stack.config.sessionSecret, 3600);
    // It is a valid platform token for the API...
    expect((await stack.api.withToken(session).get('/api/v2/list-agents')).status).toBe(200);
    // ...but not the platform key the board asks for.
    expectError(
      await stack.api.get(`${BOARD}/api/queues`, { Authorization: `Bearer ${session}` }),
      403,
      'forbidden',
    );
    expectError(await stack.api.get(BOARD, { Authorization: `Bearer ${session}` }), 403, 'forbidden');
    expectError(
      await board(`Bearer ${session}`, 'PUT', `/api/queues/${Q}/${jobId}/promote`),
      403,
      'forbidden',
    );
    expectError(await stack.api.get(BOARD, { Authorization: basic(session) }), 401, 'unauthorized');
    expect(await stack.services.queues[Q].getJobState(jobId)).toBe('delayed');
    // The platform key itself still opens it.
    expect((await stack.admin.get(`${BOARD}/api/queues`)).status).toBe(200);
  });
});
