import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';

// A firm's do-not-call list: one document per number, `_id` = `<firm>:<phone>` (a first,
// minimal version: the store and its point read; the API, imports and opt-outs come with the
// full version).

export interface DncEntry {
  _id: string;
  firm: string;
  phone: string;
  source: 'api' | 'csv' | 'call' | 'chat' | 'widget';
  reason: string | null;
  evidence?: { call_id?: string; chat_id?: string; words?: string };
  added_at: Date;
  added_by: string;
}

export const dncId = (firm: string, phone: string): string => `${firm}:${phone}`;

export const dncCollection = (db: Db) => collection<DncEntry>(db, COLLECTIONS.dncEntries);

/** Point read by _id. */
export function findDncEntry(db: Db, firm: string, phone: string): Promise<DncEntry | null> {
  return dncCollection(db).findOne({ _id: dncId(firm, phone) });
}
