import { requireFirm, requireRecord } from '../../../core/domain/access/access.js';
import { isKnownCountry } from '../../../core/domain/contact-points/phones.js';
import {
  contactSyncState,
  startContactSync,
  syncsCollection,
} from '../../../core/domain/contacts/contact-sync.js';
import { invalidRequest, quote } from '../../../core/platform/errors.js';
import { defineRoute } from '../../route.js';
import { syncJobView } from './present.js';
import { SyncAccepted, SyncContactsBody, SyncJobParams, SyncJobResponse } from './sync-schema.js';

const tag = 'Contacts';

export const contactSyncRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/contacts/sync',
    operationId: 'syncContacts',
    summary:
      "Start a sync of the firm's contacts from Clio or RingCentral: each contact with a phone or email is stored as an import row would be (RingCentral: FSync first, ISync after, removals marked deleted_at). 202 with a job_id; 409 sync_running while one runs, 409 crm_not_connected without Clio, 409 phone_system_not_connected without RingCentral",
    tag,
    auth: { kind: 'token' },
    body: SyncContactsBody,
    accepted: SyncAccepted,
    errors: [403, 404, 409],
    handler: async ({ services, principal, body, koa }) => {
      const country = (body.defaultCountry ?? 'US').toUpperCase();
      if (!isKnownCountry(country)) {
        throw invalidRequest(`defaultCountry ${quote(body.defaultCountry)} is not a country code we know.`, [
          { path: '/defaultCountry', message: 'is not a known ISO 3166-1 alpha-2 country code' },
        ]);
      }
      const firm = await requireFirm(services.mongo.db, principal, body.firmSlug);
      const jobId = await startContactSync(services, firm, country, body.source);
      koa.status = 202;
      koa.body = { job_id: jobId };
      return undefined;
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/contacts/sync/{job_id}',
    operationId: 'getContactsSync',
    summary: 'A contacts sync: running, completed or failed, with its pages and counts so far',
    tag,
    auth: { kind: 'token' },
    params: SyncJobParams,
    response: SyncJobResponse,
    errors: [404],
    handler: async ({ services, principal, params }) => {
      const sync = requireRecord(
        principal,
        await syncsCollection(services.mongo.db).findOne({ _id: params.job_id }),
        'sync_job',
        'No contacts sync was found with that job_id.',
      );
      return syncJobView(await contactSyncState(services, sync));
    },
  }),
];
