// The built-in chat agent when Cal.com fails (docs/appointments.md#the-chat-agent): the intake
// goes on and nothing is booked — before the offer (no offer, the reply as without a provider)
// and at the pick (an apology, the offer kept so the visitor can pick again). It was a 502 to the
// visitor's chat-completion, ending the conversation because the firm's calendar was down.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent, createChat, getChat, say, INTAKE_ANSWERS } from '../chat/chat-helpers.js';
import { dailySlots, startFakeCalcom, type FakeCalcom } from '../fakes/calcom-server.js';

const API_KEY = 'cal_live_chat_down_0123456789';
const EVENT_TYPE = 4242;
const DAY = 86_400_000;

let stack: Stack;
let cal: FakeCalcom;

beforeAll(async () => {
  stack = await startStack();
  cal = await startFakeCalcom({
    apiKey: API_KEY,
    eventTypeId: EVENT_TYPE,
    slots: dailySlots(Date.now() + DAY, 5, 3),
  });
});
afterAll(async () => {
  await cal?.stop();
  await stack?.stop();
});

async function chatFor(baseUrl: string) {
  const firm = await createFirm(stack, {
    booking: { provider: 'calcom', api_key: API_KEY, event_type_id: EVENT_TYPE, base_url: baseUrl },
  });
  const agent = await createAgent(firm.client, firm.slug);
  const chat = await createChat(firm.client, firm.slug, agent.agent_id);
  return { firm, chatId: chat.chat_id };
}

describe('the chat agent when Cal.com fails', () => {
  it('cannot be reached when the questions are answered: no offer, the intake answers kept', async () => {
    const { firm, chatId } = await chatFor('http://127.0.0.1:1');
    let last = '';
    for (const answer of INTAKE_ANSWERS) last = await say(firm.client, chatId, answer);
    expect(last).not.toContain('Would you like a free consultation?');
    const chat = await getChat(firm.client, chatId);
    expect(chat.status).toBe('ongoing');
    expect(JSON.stringify(chat)).toContain('jane.doe@example.com');
  });

  it('fails as the visitor picks a time: an apology, nothing booked, and the pick works once it is back', async () => {
    const { firm, chatId } = await chatFor(cal.url);
    let offer = '';
    for (const answer of INTAKE_ANSWERS) offer = await say(firm.client, chatId, answer);
    expect(offer).toContain('Would you like a free consultation?');
    // Every booking attempt of this request fails (the booking retries within the request).
    cal.failBookings(100);
    const down = await say(firm.client, chatId, '1');
    expect(down).toMatch(/^Sorry, the calendar cannot be reached right now/);
    expect(cal.bookings).toHaveLength(0);
    cal.failBookings(0);
    const booked = await say(firm.client, chatId, '1');
    expect(booked).toMatch(/^Your consultation is booked for /);
    expect(cal.bookings).toHaveLength(1);
  });
});
