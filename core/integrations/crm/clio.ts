import type { UrlPolicy } from '../../platform/url-policy.js';
import { RateLimitedError, parseRetryAfter, withRetryAfter } from '../../platform/retry-after.js';
import {
  guardedRequest,
  requestMayHaveBeenSent,
  urlPolicyRefusal,
  type GuardedResponse,
} from '../http/guarded-http.js';

// Clio Manage API v4 (https://app.clio.com/api/v4, or a firm's regional base URL): the few
// calls the intake pipeline, the contacts sync and the workflows make — find contacts, read one,
// list them page by page, create a Person, create a Matter for it, find a matter by our
// reference, create a task or a note and find one by the reference in its text — each as
// Clio's v4 OpenAPI document has it (test/fakes/spec/clio-v4.json judges them in the tests):
// `fields=` names only what the listed resource has (a listed EmailAddress or PhoneNumber has
// `primary`; `default_email`/`default_number` exist only in create bodies), enums in their case. Bearer token per firm (settings.crm.access_token). Every
// request goes through guardedRequest (URL policy at call time, no redirects). A 429 is waited
// out for its Retry-After and the same request sent again (bounded): Clio did not process it.

/** A Person needs a first or a last name (Clio refuses one with neither); null names are not sent. */
export interface ClioPersonInput {
  first_name: string | null;
  last_name: string | null;
  email: string | null;
  phone: string | null;
}

export interface ClioContact {
  id: number;
  name: string;
  emails: string[];
  phones: string[];
}

export interface ClioMatterInput {
  clientId: number;
  description: string;
  /** Clio's create enum is lower case: open, closed, pending. */
  status: 'open' | 'pending';
  /** Our reference on the matter (Clio's client_reference): how a retry finds a matter it made. */
  reference: string;
}

/** A task (POST /tasks.json). The document requires a name, a description and an assignee. */
export interface ClioTaskInput {
  name: string;
  description: string;
  /** ISO 8601 date-time; not sent when null. */
  dueAt: string | null;
  assignee: { id: number; type: 'User' | 'Contact' };
  matterId: number | null;
}

/** A note (POST /notes.json) on a matter, or on a contact when there is no matter. */
export interface ClioNoteInput {
  subject: string;
  detail: string;
  matterId: number | null;
  contactId: number;
}

/**
 * A Clio request failed. `final`: Clio refused the request itself (400, 404, 422, a redirect, a
 * URL the policy refuses) and repeating it cannot help. `mayHaveHappened`: a write may have been
 * applied although no success came back (a 5xx, a timeout after sending).
 */
export class CrmError extends Error {
  constructor(
    message: string,
    readonly final: boolean,
    readonly mayHaveHappened: boolean,
    readonly status: number | null = null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'CrmError';
  }
}

/** Where an OAuth-connected firm's token comes from (core/domain/crm/clio-connection.ts). */
export interface ClioTokenSource {
  /** A token to use now (refreshed first when it is about to expire). */
  current(): Promise<string>;
  /** Clio answered 401 to `stale`: a token refreshed since (by this caller or another). */
  renew(stale: string): Promise<string>;
}

/** A contact as Clio's contact listing gives it (the fields CLIO_CONTACT_FIELDS asks for). */
export interface ClioListedContact {
  id: number;
  type: string | null;
  name: string | null;
  first_name: string | null;
  last_name: string | null;
  primary_email_address: string | null;
  primary_phone_number: string | null;
  /** `primary`: the contact's default (a listed EmailAddress / PhoneNumber). */
  email_addresses: Array<{ address: string | null; primary: boolean }>;
  phone_numbers: Array<{ number: string | null; primary: boolean }>;
  updated_at: string | null;
}

/** One page of the listing, and the URL of the next (Clio's meta.paging.next), null on the last. */
export interface ClioContactPage {
  contacts: ClioListedContact[];
  next: string | null;
}

const CLIO_CONTACT_FIELDS =
  'id,type,name,first_name,last_name,primary_email_address,primary_phone_number,' +
  'email_addresses{address,primary},phone_numbers{number,primary},updated_at';

/** Where Clio's API lives under a base URL; listings are served with and without `.json`. */
const API_PATH = '/api/v4';
const CONTACT_LISTING = new Set([`${API_PATH}/contacts`, `${API_PATH}/contacts.json`]);

interface ClioOptions {
  baseUrl: string;
  /** A pasted token, or an OAuth connection's token source (refreshed once on a 401). */
  accessToken: string | ClioTokenSource;
  policy: UrlPolicy;
  timeoutMs?: number;
  maxRateLimitWaits?: number;
  maxRateLimitWaitMs?: number;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

export class ClioClient {
  private readonly base: string;

  constructor(private readonly options: ClioOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
  }

  /** Person contacts matching `query` (Clio's wildcard search over names, emails, phones, ...). */
  async findContacts(query: string): Promise<ClioContact[]> {
    const params = new URLSearchParams({
      query,
      type: 'Person',
      fields: 'id,name,email_addresses{address},phone_numbers{number}',
      limit: '200',
    });
    const body = await this.call('GET', `${API_PATH}/contacts.json?${params}`);
    const rows = Array.isArray(body.data) ? (body.data as unknown[]) : [];
    return rows.flatMap((row) => {
      const contact =
        typeof row === 'object' && row !== null ? contactOf(row as Record<string, unknown>) : null;
      return contact === null ? [] : [contact];
    });
  }

  /**
   * The first page of the Person contacts (updated since `updatedSince`, when given) by Clio's
   * cursor paging: `order=id(asc)` and no offset, so the listing has no record limit and
   * meta.paging.next is the URL of the next page (docs.developers.clio.com, "Pagination").
   */
  firstContactsPageUrl(limit: number, updatedSince: Date | null): string {
    const params = new URLSearchParams({
      type: 'Person',
      fields: CLIO_CONTACT_FIELDS,
      order: 'id(asc)',
      limit: String(limit),
    });
    if (updatedSince !== null) params.set('updated_since', updatedSince.toISOString());
    return `${this.base}/api/v4/contacts.json?${params}`;
  }

  /**
   * One page of the contact listing at `url` (firstContactsPageUrl, or a page's `next`). Clio's
   * next links name the listing without `.json` (docs.developers.clio.com, "Pagination"); either
   * form is followed, judged against the configured base URL: the same origin and, under the base
   * URL's own path, the contacts listing itself. The bearer token goes nowhere else.
   */
  async contactsPage(url: string): Promise<ClioContactPage> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      throw new CrmError('Clio gave a paging link that is not a URL.', true, false);
    }
    const base = new URL(this.base);
    const prefix = base.pathname.replace(/\/+$/, '');
    const listing = target.pathname.startsWith(`${prefix}/`) ? target.pathname.slice(prefix.length) : null;
    if (target.origin !== base.origin || listing === null || !CONTACT_LISTING.has(listing)) {
      throw new CrmError('Clio gave a paging link outside its contacts listing.', true, false);
    }
    const body = await this.call('GET', `${listing}${target.search}`);
    const rows = Array.isArray(body.data) ? (body.data as unknown[]) : [];
    const paging = (body.meta as { paging?: { next?: unknown } } | undefined)?.paging;
    const next = typeof paging?.next === 'string' && paging.next !== '' ? paging.next : null;
    return { contacts: rows.flatMap((row) => listedContact(row)), next };
  }

  /**
   * The Person contact with this id, or null when Clio has none (deleted or merged since it was
   * synced, or not a Person).
   */
  async getContact(id: number): Promise<ClioContact | null> {
    const params = new URLSearchParams({
      fields: 'id,type,name,email_addresses{address},phone_numbers{number}',
    });
    let body: Record<string, unknown>;
    try {
      body = await this.call('GET', `${API_PATH}/contacts/${id}.json?${params}`);
    } catch (err) {
      if (err instanceof CrmError && err.status === 404) return null;
      throw err;
    }
    const row = body.data as Record<string, unknown> | undefined;
    if (row?.type !== 'Person') return null;
    return contactOf(row);
  }

  /**
   * POST /api/v4/contacts.json: a Person with its email and phone as defaults; returns its id.
   * The document requires `name` with `type`; the first and last names say how it splits.
   * Names of the email and phone: "Other", the default and a value the listing also has.
   */
  async createPerson(person: ClioPersonInput): Promise<number> {
    const name = [person.first_name, person.last_name].filter((n) => n !== null).join(' ');
    const data: Record<string, unknown> = { type: 'Person', name };
    if (person.first_name !== null) data.first_name = person.first_name;
    if (person.last_name !== null) data.last_name = person.last_name;
    if (person.email !== null) {
      data.email_addresses = [{ name: 'Other', address: person.email, default_email: true }];
    }
    if (person.phone !== null) {
      data.phone_numbers = [{ name: 'Other', number: person.phone, default_number: true }];
    }
    return this.idOf(await this.call('POST', `${API_PATH}/contacts.json`, { data }), 'contact');
  }

  /** POST /api/v4/matters.json for a client contact; returns the matter's id. */
  async createMatter(matter: ClioMatterInput): Promise<number> {
    const data = {
      client: { id: matter.clientId },
      description: matter.description,
      status: matter.status,
      client_reference: matter.reference,
    };
    return this.idOf(await this.call('POST', `${API_PATH}/matters.json`, { data }), 'matter');
  }

  /**
   * The matter of this client that carries our reference, if one exists: among its 200 newest
   * (a matter just made, whose answer was lost, has the highest id; Clio's default order, id(asc),
   * would show a client of many matters only its oldest).
   */
  async findMatterByReference(clientId: number, reference: string): Promise<number | null> {
    const params = new URLSearchParams({
      client_id: String(clientId),
      fields: 'id,client_reference',
      order: 'id(desc)',
      limit: '200',
    });
    const body = await this.call('GET', `${API_PATH}/matters.json?${params}`);
    const rows = Array.isArray(body.data) ? (body.data as Array<Record<string, unknown>>) : [];
    const found = rows.find((r) => r?.client_reference === reference && typeof r.id === 'number');
    return found === undefined ? null : (found.id as number);
  }

  /** The id of the Clio user the token is for (GET /api/v4/users/who_am_i.json). */
  async currentUserId(): Promise<number> {
    const body = await this.call('GET', `${API_PATH}/users/who_am_i.json?fields=id`);
    const id = (body.data as Record<string, unknown> | undefined)?.id;
    if (typeof id !== 'number') throw new CrmError("Clio's who_am_i answered no user id.", false, false);
    return id;
  }

  /** POST /api/v4/tasks.json; returns the task's id. */
  async createTask(task: ClioTaskInput): Promise<number> {
    const data: Record<string, unknown> = {
      name: task.name,
      description: task.description,
      assignee: task.assignee,
    };
    if (task.dueAt !== null) data.due_at = task.dueAt;
    if (task.matterId !== null) data.matter = { id: task.matterId };
    return this.idOf(await this.call('POST', `${API_PATH}/tasks.json`, { data }), 'task');
  }

  /**
   * The task whose description carries `reference` (Clio's task `query` searches the name and
   * the description), on the matter when one is given; null when there is none.
   */
  async findTaskByReference(reference: string, matterId: number | null): Promise<number | null> {
    const params = new URLSearchParams({ query: reference, fields: 'id,description', limit: '200' });
    if (matterId !== null) params.set('matter_id', String(matterId));
    const body = await this.call('GET', `${API_PATH}/tasks.json?${params}`);
    return referencedId(body, 'description', reference);
  }

  /** POST /api/v4/notes.json: a "Matter" note when a matter is given, else a "Contact" note. */
  async createNote(note: ClioNoteInput): Promise<number> {
    const data: Record<string, unknown> = {
      type: note.matterId === null ? 'Contact' : 'Matter',
      subject: note.subject,
      detail: note.detail,
      contact: { id: note.contactId },
    };
    if (note.matterId !== null) data.matter = { id: note.matterId };
    return this.idOf(await this.call('POST', `${API_PATH}/notes.json`, { data }), 'note');
  }

  /** The note of that matter (or contact) whose detail carries `reference`; null when none. */
  async findNoteByReference(
    reference: string,
    regarding: { matterId: number | null; contactId: number },
  ): Promise<number | null> {
    const params = new URLSearchParams({ query: reference, fields: 'id,detail', limit: '200' });
    if (regarding.matterId !== null) {
      params.set('type', 'Matter');
      params.set('matter_id', String(regarding.matterId));
    } else {
      params.set('type', 'Contact');
      params.set('contact_id', String(regarding.contactId));
    }
    const body = await this.call('GET', `${API_PATH}/notes.json?${params}`);
    return referencedId(body, 'detail', reference);
  }

  private idOf(body: Record<string, unknown>, what: string): number {
    const id = (body.data as Record<string, unknown> | undefined)?.id;
    if (typeof id !== 'number') {
      // Created, but we cannot tell which record: the next attempt looks for it before writing.
      throw new CrmError(`Clio created the ${what} but its answer had no id.`, false, true);
    }
    return id;
  }

  private async call(
    method: 'GET' | 'POST',
    path: string,
    payload?: unknown,
  ): Promise<Record<string, unknown>> {
    const source = this.options.accessToken;
    if (typeof source === 'string') return this.callWith(source, method, path, payload);
    const token = await source.current();
    try {
      return await this.callWith(token, method, path, payload);
    } catch (err) {
      // A 401 was answered before anything was done: refresh once and send it again.
      if (!(err instanceof CrmError) || err.status !== 401) throw err;
      return this.callWith(await source.renew(token), method, path, payload);
    }
  }

  private async callWith(
    accessToken: string,
    method: 'GET' | 'POST',
    path: string,
    payload?: unknown,
  ): Promise<Record<string, unknown>> {
    const once = async (): Promise<Record<string, unknown>> => {
      let answer: GuardedResponse;
      try {
        answer = await guardedRequest(`${this.base}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${accessToken}`,
            accept: 'application/json',
            ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
          policy: this.options.policy,
          timeoutMs: this.options.timeoutMs ?? 20_000,
        });
      } catch (err) {
        const refused = urlPolicyRefusal(err);
        if (refused !== null) {
          throw new CrmError(`The Clio base URL is not allowed: ${refused.reason}`, true, false, null, {
            cause: err,
          });
        }
        const sent = requestMayHaveBeenSent(err);
        throw new CrmError(
          `Clio could not be reached: ${(err as Error).message}`,
          false,
          method === 'POST' && sent,
          null,
          {
            cause: err,
          },
        );
      }
      if (answer.status === 429) {
        throw new RateLimitedError('Clio', parseRetryAfter(answer.headers['retry-after']));
      }
      if (answer.status < 200 || answer.status >= 300) throw this.failure(method, path, answer);
      try {
        const parsed: unknown = answer.body === '' ? {} : JSON.parse(answer.body);
        return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
      } catch {
        throw new CrmError(
          `Clio answered ${answer.status} with a body that is not JSON.`,
          false,
          method === 'POST',
          answer.status,
        );
      }
    };
    try {
      return await withRetryAfter(once, {
        ...(this.options.maxRateLimitWaits === undefined ? {} : { maxWaits: this.options.maxRateLimitWaits }),
        ...(this.options.maxRateLimitWaitMs === undefined
          ? {}
          : { maxWaitMs: this.options.maxRateLimitWaitMs }),
      });
    } catch (err) {
      if (err instanceof RateLimitedError) {
        throw new CrmError(`${err.message} Still limited after waiting; trying later.`, false, false, 429, {
          cause: err,
        });
      }
      throw err;
    }
  }

  private failure(method: string, path: string, answer: GuardedResponse): CrmError {
    const status = answer.status;
    const detail = clioErrorMessage(answer.body);
    const what = `Clio answered ${status} to ${method} ${path.split('?')[0]}${detail === null ? '' : `: ${detail}`}`;
    // 401/403: a token that expired or lost access; the firm can update settings.crm and a
    // later attempt (which reads the settings again) succeeds. 5xx and 408: Clio's side.
    const final = (status >= 300 && status < 400) || status === 400 || status === 404 || status === 422;
    return new CrmError(`${what}.`, final, method === 'POST' && status >= 500, status);
  }
}

/** The id of the first listed record whose `field` contains `reference`. */
function referencedId(body: Record<string, unknown>, field: string, reference: string): number | null {
  const rows = Array.isArray(body.data) ? (body.data as Array<Record<string, unknown>>) : [];
  const found = rows.find((r) => typeof r?.id === 'number' && str(r[field])?.includes(reference) === true);
  return found === undefined ? null : (found.id as number);
}

function contactOf(r: Record<string, unknown>): ClioContact | null {
  if (typeof r.id !== 'number') return null;
  const list = (v: unknown, key: string) =>
    Array.isArray(v)
      ? v.map((e) => str((e as Record<string, unknown>)?.[key])).filter((x) => x !== null)
      : [];
  return {
    id: r.id,
    name: str(r.name) ?? '',
    emails: list(r.email_addresses, 'address'),
    phones: list(r.phone_numbers, 'number'),
  };
}

function listedContact(row: unknown): ClioListedContact[] {
  if (typeof row !== 'object' || row === null) return [];
  const r = row as Record<string, unknown>;
  if (typeof r.id !== 'number') return [];
  const items = (v: unknown) =>
    Array.isArray(v)
      ? v.filter((e): e is Record<string, unknown> => typeof e === 'object' && e !== null)
      : [];
  return [
    {
      id: r.id,
      type: str(r.type),
      name: str(r.name),
      first_name: str(r.first_name),
      last_name: str(r.last_name),
      primary_email_address: str(r.primary_email_address),
      primary_phone_number: str(r.primary_phone_number),
      email_addresses: items(r.email_addresses).map((e) => ({
        address: str(e.address),
        primary: e.primary === true,
      })),
      phone_numbers: items(r.phone_numbers).map((e) => ({
        number: str(e.number),
        primary: e.primary === true,
      })),
      updated_at: str(r.updated_at),
    },
  ];
}

/** Clio's error body: {"error": {"type": "...", "message": "..."}}, shortened. */
function clioErrorMessage(body: string): string | null {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } };
    const message = parsed.error?.message;
    return typeof message === 'string' ? message.slice(0, 200) : null;
  } catch {
    return null;
  }
}
