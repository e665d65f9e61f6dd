import type { Context } from 'koa';
import type { ClioTokenHolder } from '../../../core/integrations/crm/clio-oauth.js';
import { AppError } from '../../../core/platform/errors.js';
import { escapeHtml } from '../../../core/platform/html.js';

// The pages a browser sees during the Clio connect flow (docs/clio.md#connected-with-oauth):
// the confirmation, the result, and an error page saying why. Every value goes through escapeHtml;
// no script; the only form posts to this service.

const STYLE =
  'body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem}' +
  'dl{display:grid;grid-template-columns:auto 1fr;gap:.25rem 1rem}dt{font-weight:600}' +
  'form{display:inline-block;margin-right:.5rem}button{font-size:1rem;padding:.4rem 1rem}';

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="referrer" content="no-referrer"><style>${STYLE}</style></head>
<body><h1>${escapeHtml(title)}</h1>
${body}</body></html>
`;
}

/** Sends a page: no caching, no framing, no referrer, nothing loaded, forms only to this service. */
export function sendPage(koa: Context, status: number, html: string): void {
  koa.status = status;
  koa.set(
    'Content-Security-Policy',
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  );
  koa.set('Cache-Control', 'no-store');
  koa.set('Referrer-Policy', 'no-referrer');
  koa.set('X-Frame-Options', 'DENY');
  koa.type = 'text/html; charset=utf-8';
  koa.body = html;
}

const firmLine = (firmName: string, slug: string) =>
  `${escapeHtml(firmName)} (<code>${escapeHtml(slug)}</code>)`;

export function confirmationPage(
  firmName: string,
  slug: string,
  region: string,
  holder: ClioTokenHolder,
  id: string,
): string {
  const action = (decision: string) =>
    escapeHtml(`/api/integrations/clio/confirm?confirmation=${encodeURIComponent(id)}&decision=${decision}`);
  const account = `${escapeHtml(holder.name)} &lt;${escapeHtml(holder.email)}&gt;${
    holder.account === null ? '' : `, of the Clio firm ${escapeHtml(holder.account)}`
  }`;
  return page(
    'Connect Clio?',
    `<p>Clio approved access. Nothing is connected until you confirm that this is the firm and the Clio account you meant.</p>
<dl><dt>Firm</dt><dd id="firm">${firmLine(firmName, slug)}</dd>
<dt>Clio account</dt><dd id="clio-account">${account} (region ${escapeHtml(region)})</dd></dl>
<p>Once connected, this firm's new intakes are added to that Clio account, and its contacts are read from it.</p>
<form method="post" action="${action('connect')}"><button id="confirm" type="submit">Connect</button></form>
<form method="post" action="${action('cancel')}"><button id="cancel" type="submit">Cancel</button></form>
`,
  );
}

export function connectedPage(firmName: string, slug: string): string {
  return page(
    'Clio connected',
    `<p id="connected">${firmLine(firmName, slug)} is connected to Clio. New intakes will be added to Clio as contacts with a matter.</p>
<p>You can close this page.</p>
`,
  );
}

export function ringCentralConnectedPage(firmName: string, slug: string, subscribed: boolean): string {
  return page(
    'RingCentral connected',
    `<p id="connected">${firmLine(firmName, slug)} is connected to RingCentral. Its contacts can be synced${
      subscribed
        ? ', and its missed calls reach this service'
        : '; missed calls will reach this service once RingCentral accepts the subscription'
    }.</p>
<p>You can close this page.</p>
`,
  );
}

export function cancelledPage(firmName: string, slug: string): string {
  return page(
    'Clio not connected',
    `<p id="cancelled">Nothing was connected: ${firmLine(firmName, slug)} stays as it was, and the Clio access just approved was dropped.</p>
`,
  );
}

/** The error page: the error's message (why) and status, for a browser. */
export function errorPage(err: AppError, title = 'Clio was not connected'): string {
  return page(
    title,
    `<p id="reason">${escapeHtml(err.message)}</p>
<p>Nothing was connected. (${err.status} ${escapeHtml(err.code)})</p>
`,
  );
}

/**
 * Runs a page handler; an AppError becomes the error page when the client asks for HTML (a
 * browser), else it is left to the error middleware (the JSON error body).
 */
export async function withErrorPage(
  koa: Context,
  handler: () => Promise<void>,
  title?: string,
): Promise<void> {
  try {
    await handler();
  } catch (err) {
    if (!(err instanceof AppError) || koa.accepts('json', 'html') !== 'html') throw err;
    for (const [name, value] of Object.entries(err.headers ?? {})) koa.set(name, value);
    sendPage(koa, err.status, errorPage(err, title));
  }
}
