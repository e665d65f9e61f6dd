/** Who is calling: the platform (every firm, admin routes) or one firm. */
export type Principal =
  | { kind: 'platform'; via: 'platform_key' | 'session'; subject: string }
  | { kind: 'firm'; firm: string; via: 'api_key' | 'session' | 'webhook_signature'; subject: string };
