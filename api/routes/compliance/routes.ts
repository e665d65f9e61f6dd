import { requireFirm, requireListFirm } from '../../../core/domain/access/access.js';
import {
  MAX_LISTED_INVALID,
  readCsvPhones,
  readPhones,
  type InvalidPhone,
} from '../../../core/domain/compliance/dnc-input.js';
import { addDncEntries, listDncEntries, removeDncEntry } from '../../../core/domain/compliance/dnc-store.js';
import { numberDialsSettled } from '../../../core/domain/calls/dials-under-way.js';
import { afterListing } from '../../../core/domain/compliance/dnc-sweep.js';
import {
  isKnownCountry,
  normalizeDialablePhone,
  type CountryCode,
} from '../../../core/domain/contact-points/phones.js';
import { invalidRequest, notFound, quote } from '../../../core/platform/errors.js';
import { defineRoute } from '../../route.js';
import { dncEntryView, principalName } from './present.js';
import {
  AddDncBody,
  AddDncResponse,
  DncPhoneParams,
  ImportDncBody,
  ImportDncResponse,
  ListDncQuery,
  ListDncResponse,
  RemoveDncQuery,
  RemoveDncResponse,
} from './schema.js';

const tag = 'Compliance';

function countryOf(given: string | undefined, path: string): CountryCode {
  const country = (given ?? 'US').toUpperCase();
  if (!isKnownCountry(country)) {
    throw invalidRequest(`defaultCountry ${quote(given)} is not a country code we know.`, [
      { path, message: 'is not a known ISO 3166-1 alpha-2 country code' },
    ]);
  }
  return country;
}

const listed = <K extends 'index' | 'line'>(invalid: InvalidPhone[], key: K) =>
  invalid
    .slice(0, MAX_LISTED_INVALID)
    .map(
      (p) =>
        ({ [key]: p.at, value: p.value, reason: p.reason }) as Record<K, number> & Omit<InvalidPhone, 'at'>,
    );

export const complianceRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/compliance/dnc',
    operationId: 'addDncNumbers',
    summary:
      "Put 1 to 5,000 numbers on the firm's do-not-call list (one bulk write): counts added, already listed and invalid",
    tag,
    auth: { kind: 'token' },
    body: AddDncBody,
    response: AddDncResponse,
    errors: [403, 404, 413],
    handler: async ({ services, principal, body }) => {
      const country = countryOf(body.defaultCountry, '/defaultCountry');
      const firm = await requireFirm(services.mongo.db, principal, body.firmSlug);
      const { phones, invalid } = readPhones(body.phones, country);
      const { added } = await addDncEntries(services.mongo.db, firm._id, phones, {
        source: body.source ?? 'api',
        reason: body.reason ?? null,
        added_by: principalName(principal),
      });
      // The gate's index, and queued campaign calls to these numbers blocked now, not when their
      // jobs come due: every number asked, listed before or not; dnc.added for those listed now (by the sweep).
      await afterListing(services, firm._id, phones, added);
      // A dial to one of them under way since before the entries were written is over first: no
      // call to a listed number is dialled after this answer.
      await numberDialsSettled(services, firm._id, phones);
      return {
        added: added.length,
        already_listed: phones.length - added.length,
        invalid: invalid.length,
        invalid_phones: listed(invalid, 'index'),
      };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api/compliance/dnc-import',
    operationId: 'importDncCsv',
    summary:
      "Put the numbers of a CSV (up to 5,000 rows) on the firm's do-not-call list, with per-row errors",
    tag,
    auth: { kind: 'token' },
    body: ImportDncBody,
    response: ImportDncResponse,
    errors: [403, 404, 413],
    handler: async ({ services, principal, body }) => {
      const country = countryOf(body.defaultCountry, '/defaultCountry');
      const firm = await requireFirm(services.mongo.db, principal, body.firmSlug);
      const { rows, phones, invalid } = readCsvPhones(body.csv, country);
      const { added } = await addDncEntries(services.mongo.db, firm._id, phones, {
        source: 'csv',
        reason: body.reason ?? null,
        added_by: principalName(principal),
      });
      // The gate's index, and queued campaign calls to these numbers blocked now, not when their
      // jobs come due: every number asked, listed before or not; dnc.added for those listed now (by the sweep).
      await afterListing(services, firm._id, phones, added);
      // A dial to one of them under way since before the entries were written is over first: no
      // call to a listed number is dialled after this answer.
      await numberDialsSettled(services, firm._id, phones);
      return {
        rows,
        added: added.length,
        already_listed: phones.length - added.length,
        invalid: invalid.length,
        invalid_rows: listed(invalid, 'line'),
      };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/compliance/dnc',
    operationId: 'listDncNumbers',
    summary: "The firm's do-not-call list in E.164 order; keyset pagination with an opaque cursor",
    tag,
    auth: { kind: 'token' },
    query: ListDncQuery,
    response: ListDncResponse,
    errors: [403, 404],
    handler: async ({ services, principal, query }) => {
      const firm = await requireListFirm(services.mongo.db, principal, query.firmSlug);
      const page = await listDncEntries(
        services.mongo.db,
        services.config.sessionSecret,
        firm._id,
        query.limit,
        query.cursor,
      );
      return { entries: page.entries.map(dncEntryView), next_cursor: page.next_cursor };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/api/compliance/dnc/{phone}',
    operationId: 'removeDncNumber',
    summary:
      "Take a number off the firm's do-not-call list (the platform key, or the firm's own token: its explicit request); the removal is recorded, with the reason when one is given",
    tag,
    auth: { kind: 'token' },
    params: DncPhoneParams,
    query: RemoveDncQuery,
    response: RemoveDncResponse,
    errors: [403, 404],
    handler: async ({ services, principal, params, query }) => {
      const country = countryOf(query.defaultCountry, '/defaultCountry');
      const phone = normalizeDialablePhone(params.phone, country)?.e164;
      if (phone === undefined) {
        throw invalidRequest(`${quote(params.phone)} is not a valid phone number.`, [
          { path: '/phone', message: 'is not a valid phone number (E.164)' },
        ]);
      }
      const firm = await requireListFirm(services.mongo.db, principal, query.firmSlug);
      // The platform's, or the firm's own explicit request (its token): who removed it and why
      // (when a reason is given) are recorded with the entry as it was.
      const authority = principal.kind === 'platform' ? 'platform' : 'firm_request';
      const removal = await removeDncEntry(services.mongo.db, firm._id, phone, {
        removed_by: principalName(principal),
        authority,
        reason: query.reason ?? null,
      });
      if (removal === null) {
        throw notFound('dnc_entry', `The number ${phone} is not on the firm's do-not-call list.`);
      }
      return {
        phone,
        firm: firm._id,
        removed: true as const,
        removal_id: removal._id,
        removed_at: removal.removed_at.toISOString(),
        removed_by: removal.removed_by,
        authority: removal.authority,
        reason: removal.reason,
      };
    },
  }),
];
