import { randomBytes } from 'node:crypto';
import type { WidgetSession } from '../../core/domain/widget/widget-session.js';
import { TEST_WIDGET_TEMPLATE, widgetAssetIntegrity, widgetAssetPath } from './assets.js';

// The widget test page (docs/widget.md#escaping), built from test-widget.html. Every value that came from
// the request is put where it goes through the escape for that place:
//   HTML text and quoted attributes: escapeHtml (& < > " ');
//   URLs in attributes: URLSearchParams (percent-encoding), then escapeHtml; the page's own path
//     leads, so no value can choose a scheme (javascript:);
//   CSS: only a colour that matched #rrggbb, applied by the script through the CSSOM;
//   the script's settings: JSON in a <script type="application/json"> block, with <, > and &
//     written as \u escapes so the block cannot be closed from inside.
// The scripts run by the nonce of this response only: no inline script, nothing remote.

export const WIDGET_DEFAULTS = {
  title: 'Chat with us',
  greeting: 'Hi! How can we help you today?',
  primaryColor: '#1d4ed8',
  position: 'right' as 'left' | 'right',
};

const COLOR = /^#[0-9a-fA-F]{6}$/;
const PAGE_PATH = '/api/test-widget';

export interface WidgetPageSettings {
  agentId?: string | undefined;
  title?: string | undefined;
  greeting?: string | undefined;
  primaryColor?: string | undefined;
  position?: 'left' | 'right' | undefined;
}

/** Text for HTML content or a double-quoted attribute value. */
export function escapeHtml(value: string): string {
  return value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** JSON that can sit inside a <script> element: nothing in it can end the element or open a comment. */
function jsonForScriptBlock(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/**
 * What the snippet names in place of a key while the firm has none: plainly not a key (no
 * `iwpk_`), so a page that embeds it as it is gets a clear refusal, never another firm's widget.
 */
export const SNIPPET_KEY_PLACEHOLDER = 'YOUR_WIDGET_KEY';

/** A publishable widget key of the firm, whose snippet the page's panel shows. */
export interface SnippetKey {
  id: string;
  name: string;
  key: string;
}

export interface EmbedScript {
  /** The absolute URL of widget.js's current version. */
  src: string;
  /** Its SRI value (sha384-…). */
  integrity: string;
}

/** widget.js's current version on this service (docs/widget.md#embed). */
export function embedScript(publicBaseUrl: string): EmbedScript {
  return {
    src: `${publicBaseUrl}${widgetAssetPath('widget.js')}`,
    integrity: widgetAssetIntegrity('widget.js'),
  };
}

/**
 * The embed snippet (GET /api/widget-keys/{id}/snippet and the test page's panel; test-widget.js
 * writes the same after every change): one <script> tag, pinned to widget.js's current version
 * by its SRI hash, loaded with CORS (crossorigin) so the browser can check that hash. Settings
 * left empty are left out (the widget then uses its defaults).
 */
export function embedSnippet(
  script: EmbedScript,
  key: string,
  s: { agentId?: string; title?: string; greeting?: string; primaryColor?: string; position?: string },
): string {
  const attributes: Array<[string, string | undefined]> = [
    ['src', script.src],
    ['integrity', script.integrity],
    ['crossorigin', 'anonymous'],
    ['data-key', key],
    ['data-agent-id', s.agentId],
    ['data-title', s.title],
    ['data-greeting', s.greeting],
    ['data-primary-color', s.primaryColor],
    ['data-position', s.position],
  ];
  const text = attributes
    .filter((pair): pair is [string, string] => pair[1] !== undefined && pair[1] !== '')
    .map(([name, value]) => ` ${name}="${escapeHtml(value)}"`)
    .join('');
  return `<script${text} async></script>`;
}

function pageLink(firm: string, s: Required<WidgetPageSettings>): string {
  const query = new URLSearchParams({ firmSlug: firm, agentId: s.agentId });
  if (s.title !== '') query.set('title', s.title);
  if (s.greeting !== '') query.set('greeting', s.greeting);
  query.set('primaryColor', s.primaryColor);
  query.set('position', s.position);
  return `${PAGE_PATH}?${query.toString()}`;
}

const NOTICES: Record<Exclude<WidgetSession['state'], 'ready'>, (firm: string) => string> = {
  needs_firm: () =>
    'Choose a firm: open this page with ?firmSlug=<slug>, or ?agentId=<agent id> for that agent\u2019s firm ' +
    '(a firm\u2019s own key opens its own firm without either).\n' +
    'Optional: agentId (one of the firm\u2019s agents; default: its newest), title, greeting, ' +
    'primaryColor (#rrggbb) and position (left or right).',
  no_agents: (firm) =>
    `The firm \u201c${firm}\u201d has no agents yet, so there is nobody to chat with. ` +
    'Create one with POST /api/v2/create-agent, then reload this page.',
};

/** Fills every {{slot}} of the template; a slot without a value is a bug, not an empty string. */
function fill(template: string, slots: Record<string, string>): string {
  return template.replace(/\{\{([A-Za-z]+)\}\}/g, (_match, name: string) => {
    const value = slots[name];
    if (value === undefined) throw new Error(`test-widget.html: no value for {{${name}}}`);
    return value;
  });
}

export interface TestWidgetPage {
  html: string;
  /** The response's Content-Security-Policy (its nonce is this page's). */
  contentSecurityPolicy: string;
}

export function renderTestWidgetPage(input: {
  session: WidgetSession;
  settings: WidgetPageSettings;
  publicBaseUrl: string;
  /** The firm's widget key the snippet names (its newest); null when it has none. */
  snippetKey: SnippetKey | null;
}): TestWidgetPage {
  const { session, publicBaseUrl } = input;
  const nonce = randomBytes(18).toString('base64');
  const requested = input.settings;
  const primaryColor =
    requested.primaryColor !== undefined && COLOR.test(requested.primaryColor)
      ? requested.primaryColor.toLowerCase()
      : WIDGET_DEFAULTS.primaryColor;
  const settings: Required<WidgetPageSettings> = {
    agentId: session.state === 'ready' ? session.agentId : '',
    title: requested.title?.trim() ? requested.title : WIDGET_DEFAULTS.title,
    greeting: requested.greeting?.trim() ? requested.greeting : WIDGET_DEFAULTS.greeting,
    primaryColor,
    position: requested.position === 'left' ? 'left' : 'right',
  };
  const firm = session.state === 'needs_firm' ? '' : session.firm;
  const script = embedScript(publicBaseUrl);
  const ready = session.state === 'ready';
  const key = input.snippetKey;

  const config = ready
    ? {
        state: session.state,
        firmSlug: session.firm,
        token: session.token,
        tokenExpiresAt: session.tokenExpiresAt.toISOString(),
        script,
        widgetKey: key === null ? null : { id: key.id, name: key.name, key: key.key },
        // The key the snippet names: the firm's newest, else the placeholder.
        snippetKey: key === null ? SNIPPET_KEY_PLACEHOLDER : key.key,
        pageUrl: PAGE_PATH,
        agents: session.agents.map((a) => ({ id: a.agent_id, name: a.agent_name })),
        settings,
      }
    : { state: session.state };

  const agentOptions = ready
    ? session.agents
        .map(
          (a) =>
            `<option value="${escapeHtml(a.agent_id)}"${a.agent_id === settings.agentId ? ' selected' : ''}>` +
            `${escapeHtml(a.agent_name)}</option>`,
        )
        .join('')
    : '';

  const html = fill(TEST_WIDGET_TEMPLATE, {
    pageTitle: escapeHtml(`${settings.title} \u2014 chat widget test page`),
    state: session.state,
    notice: ready ? '' : escapeHtml(NOTICES[session.state](firm)),
    firmSlug: escapeHtml(firm),
    tokenExpiresAt: ready ? escapeHtml(session.tokenExpiresAt.toISOString()) : '',
    agentOptions,
    title: escapeHtml(settings.title),
    greeting: escapeHtml(settings.greeting),
    primaryColor: escapeHtml(settings.primaryColor),
    leftChecked: settings.position === 'left' ? 'checked' : '',
    rightChecked: settings.position === 'right' ? 'checked' : '',
    snippet: ready ? escapeHtml(embedSnippet(script, key?.key ?? SNIPPET_KEY_PLACEHOLDER, settings)) : '',
    snippetKeyName: key === null ? '' : escapeHtml(key.name),
    snippetState: key === null ? 'no-key' : 'key',
    pageLink: ready ? escapeHtml(pageLink(firm, settings)) : escapeHtml(PAGE_PATH),
    configJson: jsonForScriptBlock(config),
    nonce,
    widgetJsUrl: escapeHtml(widgetAssetPath('widget.js')),
    testWidgetJsUrl: escapeHtml(widgetAssetPath('test-widget.js')),
    testWidgetCssUrl: escapeHtml(widgetAssetPath('test-widget.css')),
  });

  const contentSecurityPolicy = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  return { html, contentSecurityPolicy };
}
