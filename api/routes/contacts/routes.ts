import { requireFirm, requireListFirm, requireRecord } from '../../../core/domain/access/access.js';
import { isKnownCountry } from '../../../core/domain/contact-points/phones.js';
import { listContacts } from '../../../core/domain/contacts/contacts.js';
import { findContactImport } from '../../../core/domain/contacts/import-record.js';
import {
  awaitContactImport,
  contactImportState,
  startContactImport,
} from '../../../core/domain/contacts/import-request.js';
import { invalidRequest, quote } from '../../../core/platform/errors.js';
import { defineRoute } from '../../route.js';
import { contactView, importJobView, importResultView } from './present.js';
import type { Lifecycle } from '../ops/routes.js';
import {
  ImportContactsBody,
  ImportContactsResponse,
  ImportJobParams,
  ImportJobResponse,
  ImportProcessing,
  ListContactsQuery,
  ListContactsResponse,
} from './schema.js';

const tag = 'Contacts';

export const contactRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/contacts/import',
    operationId: 'importContacts',
    summary:
      'Import up to 5,000 contact rows: imported, duplicates (same phone or email as a contact of the firm or an earlier row) and error rows. Waits up to 25 s for the worker, else 202 with a job_id',
    tag,
    auth: { kind: 'token' },
    body: ImportContactsBody,
    response: ImportContactsResponse,
    accepted: ImportProcessing,
    errors: [403, 404],
    bodyLimit: '16mb',
    // The rows are kept as JSON text until the worker reads them (docs/contacts.md#rows): a
    // column named "__proto__" is an ordinary field of its row, and NUL makes an error row.
    verbatimJson: true,
    handler: async ({ services, principal, body, koa }) => {
      // The body's text is not needed (the rows are staged from the parsed body): let it go now.
      // (Set to undefined, not deleted: a delete leaves the request object a slow dictionary.)
      const request = koa.request as { body?: unknown; rawBody?: string };
      request.rawBody = undefined;
      const country = (body.defaultCountry ?? 'US').toUpperCase();
      if (!isKnownCountry(country)) {
        throw invalidRequest(`defaultCountry ${quote(body.defaultCountry)} is not a country code we know.`, [
          { path: '/defaultCountry', message: 'is not a known ISO 3166-1 alpha-2 country code' },
        ]);
      }
      const firm = await requireFirm(services.mongo.db, principal, body.firmSlug);
      const importId = await startContactImport(services, firm._id, body.contacts, country);
      // The rows are staged: the request keeps nothing of its body while it waits.
      request.body = undefined;
      let clientGone = false;
      koa.res.once('close', () => (clientGone = true));
      // Stop waiting when the client has gone or the process is stopping: the job runs on.
      const lifecycle = koa.state.lifecycle as Lifecycle | undefined;
      const result = await awaitContactImport(
        services.mongo.db,
        importId,
        services.config.contactsImportWaitMs,
        () => clientGone || lifecycle?.shuttingDown === true,
      );
      if (result !== null) return importResultView(result);
      koa.status = 202;
      koa.body = { job_id: importId, status: 'processing' };
      return undefined;
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/contacts/import/{job_id}',
    operationId: 'getContactsImport',
    summary: 'The result of a contacts import (202 while it is still processing)',
    tag,
    auth: { kind: 'token' },
    params: ImportJobParams,
    response: ImportJobResponse,
    accepted: ImportProcessing,
    errors: [404],
    handler: async ({ services, principal, params, koa }) => {
      const record = requireRecord(
        principal,
        await findContactImport(services.mongo.db, params.job_id),
        'import_job',
        'No contacts import was found with that job_id.',
      );
      const view = importJobView(await contactImportState(services, record));
      if (view.status !== 'processing') return view;
      koa.status = 202;
      koa.body = view;
      return undefined;
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/contacts',
    operationId: 'listContacts',
    summary:
      "A firm's contacts, newest first, with keyset pagination; ?q= searches names, phones and emails by prefix",
    tag,
    auth: { kind: 'token' },
    query: ListContactsQuery,
    response: ListContactsResponse,
    errors: [403, 404],
    handler: async ({ services, principal, query }) => {
      const firm = await requireListFirm(services.mongo.db, principal, query.firmSlug);
      const page = await listContacts(services.mongo.db, services.config.sessionSecret, firm._id, {
        limit: query.limit,
        ...(query.q === undefined ? {} : { q: query.q }),
        ...(query.cursor === undefined ? {} : { cursor: query.cursor }),
      });
      return { contacts: page.contacts.map(contactView), next_cursor: page.next_cursor };
    },
  }),
];
