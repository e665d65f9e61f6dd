/** Who is calling with a platform or firm credential: the platform (every firm, admin routes) or one firm. */
export type ApiPrincipal =
  | { kind: 'platform'; via: 'platform_key' | 'session'; subject: string }
  | { kind: 'firm'; firm: string; via: 'api_key' | 'session' | 'webhook_signature'; subject: string };

/**
 * The holder of a widget token (docs/authentication.md#widget-tokens): the chat widget of the test page,
 * acting for one firm on the chat routes only. Only a route that opts in
 * (core/domain/access/authenticate.ts, `acceptWidget`) ever sees one; everywhere else the token is
 * refused with 403.
 */
export interface WidgetPrincipal {
  kind: 'widget';
  firm: string;
  via: 'widget_token';
  /** The token's id: chats it opens are its own, and only it may use them. */
  subject: string;
  /**
   * A widget key's token (POST /api/widget/session): the key (the token works while the key
   * exists and still allows the origin), the page origin it was issued to (the only Origin the
   * chat routes take it from, and answer CORS for), the agent it chats with, and whether its
   * session solved an ALTCHA challenge (only then may its chats book). Absent for the test page's
   * tokens.
   */
  binding?: { key: string; origin: string; agent: string; altcha: boolean };
}

export type Principal = ApiPrincipal | WidgetPrincipal;
