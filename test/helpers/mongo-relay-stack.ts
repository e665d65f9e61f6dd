import { afterAll, beforeAll } from 'vitest';
import { freshMongoUri, startStack, type Stack } from './stack.js';
import { startTcpRelay, type TcpRelay } from './tcp-relay.js';

/** A stack whose service reaches MongoDB through a relay the test can hold a write at (holdRequest). */
export interface RelayedStack {
  stack: Stack;
  relay: TcpRelay;
  stop(): Promise<void>;
}

/**
 * A stack with its workers, its own fresh database reached through a TCP relay: a test holds one
 * write there to see what a client reading between the service's writes would see.
 */
export async function startStackBehindMongoRelay(): Promise<RelayedStack> {
  const mongoUri = freshMongoUri();
  const relay = await startTcpRelay(new URL(mongoUri));
  const stack = await startStack({ workers: true, env: { MONGODB_URI: relay.via(mongoUri) } });
  return {
    stack,
    relay,
    stop: async () => {
      await stack.stop();
      await relay.close();
    },
  };
}

/**
 * The file's stack behind a MongoDB relay: started before its tests, stopped after them. Read
 * `stack` and `relay` inside the tests (they throw before the start).
 */
export function useStackBehindMongoRelay(): { readonly stack: Stack; readonly relay: TcpRelay } {
  let relayed: RelayedStack | undefined;
  beforeAll(async () => {
    relayed = await startStackBehindMongoRelay();
  });
  afterAll(async () => {
    await relayed?.stop();
  });
  const started = (): RelayedStack => {
    if (relayed === undefined) throw new Error('the stack behind the MongoDB relay is not started yet');
    return relayed;
  };
  return {
    get stack() {
      return started().stack;
    },
    get relay() {
      return started().relay;
    },
  };
}
