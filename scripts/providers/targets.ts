// The provider documents `npm run providers:derive` reads, and the operations of each that our
// clients call (core/integrations/*). A fake answers only these; add an operation here when a
// client starts calling it, then run the command.
import { join } from 'node:path';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface ProviderTarget {
  /** test/fakes/spec/<name>.json; `--<first word of name> FILE` names the full document. */
  name: string;
  /** Where the full document is kept in this workspace, when it is. */
  defaultSource?: (repoRoot: string) => string;
  /** Recorded in `x-derived-from` with the document's sha256. */
  origin: Record<string, string>;
  operations: Array<[HttpMethod, string]>;
  /**
   * Where the document contradicts its own prose (and Clio's behaviour): a JSON pointer into the
   * derived document, the value set there, and why. Listed in the output's `x-corrections`.
   */
  corrections?: Array<{ pointer: string; value: unknown; why: string }>;
}

export const PROVIDER_TARGETS: ProviderTarget[] = [
  {
    name: 'clio-v4',
    defaultSource: (root) => join(root, '..', 'shared', 'providers', 'clio-v4-openapi.json'),
    origin: {
      document: 'Clio Manage API v4 OpenAPI document, as published in Clio API documentation',
      mirror: 'github.com/traviscrawford85/clio_cli clio_client/specs/openapi.json',
      copy: 'shared/providers/clio-v4-openapi.json',
    },
    operations: [
      ['get', '/contacts.json'],
      ['post', '/contacts.json'],
      ['get', '/contacts/{id}.json'],
      ['get', '/matters.json'],
      ['post', '/matters.json'],
      ['get', '/users/who_am_i.json'],
      ['get', '/tasks.json'],
      ['post', '/tasks.json'],
      ['get', '/notes.json'],
      ['post', '/notes.json'],
    ],
    corrections: [
      {
        pointer:
          '/paths/~1notes.json/post/requestBody/content/application~1json/schema/properties/data/required',
        value: ['type'],
        why:
          'POST /notes.json lists contact, matter and type as required, while its own field ' +
          'descriptions say matter.id is required only for a "Matter" note and contact.id only ' +
          'for a "Contact" note; the fake checks that rule itself.',
      },
    ],
  },
  {
    name: 'calcom-v2',
    origin: {
      document: 'Cal.com API v2 OpenAPI document (NestJS swagger)',
      repository: 'github.com/calcom/cal.com',
      path: 'apps/api/v2/swagger/documentation.json',
    },
    operations: [
      ['get', '/v2/slots'],
      ['post', '/v2/bookings'],
      ['get', '/v2/bookings'],
      ['get', '/v2/bookings/{bookingUid}'],
      ['post', '/v2/bookings/{bookingUid}/reschedule'],
      ['post', '/v2/bookings/{bookingUid}/cancel'],
    ],
  },
  {
    name: 'ringcentral',
    origin: {
      document: 'RingCentral Connect Platform API OpenAPI document (rc-platform.yml), version 1.0.48',
      published: 'https://netstorage.ringcentral.com/dpw/api-reference/rc-platform.yml',
      mirror: 'github.com/tylerlong/rc-openapi-generator-test rc-platform.yaml',
      commit: '77dbbc32a746f61b100519f466130d57154b2915 (2022-09-02)',
      git_blob: 'cfeed2ca7e7530c6d3bdfbe23112fdc53720365e',
      retrieved: '2026-11-29',
      conversion:
        'YAML read as JSON (python3 yaml.safe_load, json.dump), then derived; sha256 is of that JSON',
    },
    operations: [
      ['post', '/restapi/oauth/token'],
      ['post', '/restapi/oauth/revoke'],
      ['get', '/restapi/v1.0/account/{accountId}/extension/{extensionId}'],
      ['get', '/restapi/v1.0/account/{accountId}/extension/{extensionId}/address-book-sync'],
      ['post', '/restapi/v1.0/subscription'],
      ['get', '/restapi/v1.0/subscription/{subscriptionId}'],
      ['delete', '/restapi/v1.0/subscription/{subscriptionId}'],
      ['post', '/restapi/v1.0/subscription/{subscriptionId}/renew'],
    ],
  },
];
