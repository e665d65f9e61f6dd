import type { Collection, Filter } from 'mongodb';
import type { AppError } from '../../platform/errors.js';
import { sameBrowser } from '../crm/connect-cookie.js';

// An OAuth connect flow's state (Clio's, RingCentral's): a claim whose `_id` is the state, bound
// to the firm and to the hash of the browser's connect cookie (connect-cookie.ts), valid 10
// minutes. The callback uses it once: the delete is the use (of two callbacks with one state, one
// deletes it), and a callback in another browser uses it too — the link was passed on, so that
// flow is over (docs/clio.md#who-may-finish-a-connection).

export interface ConnectStateDoc {
  _id: string;
  firm: string;
  /** The hash of the connect cookie of the browser that started the flow. */
  browser: string;
  expires_at: Date;
}

/**
 * The state, used up; `unknown` (unknown, expired or used) or `otherBrowser` (after a warning,
 * through `onOtherBrowser`) thrown otherwise.
 */
export async function useConnectState<S extends ConnectStateDoc>(
  states: Collection<S>,
  state: string,
  browserKey: string | undefined,
  refusals: { unknown: () => AppError; otherBrowser: () => AppError; onOtherBrowser?: (pending: S) => void },
): Promise<S> {
  const byId = { _id: state } as Filter<S>;
  const pending = (await states.findOne(byId)) as S | null;
  if (pending === null) throw refusals.unknown();
  const used = await states.deleteOne(byId);
  if (used.deletedCount !== 1 || pending.expires_at.getTime() <= Date.now()) throw refusals.unknown();
  if (!sameBrowser(pending.browser, browserKey)) {
    refusals.onOtherBrowser?.(pending);
    throw refusals.otherBrowser();
  }
  return pending;
}
