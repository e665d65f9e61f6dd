// URLs for the firm settings the service calls (slack_webhook_url, crm.base_url): one sample list
// for the pure rule (test/unit/url-policy.test.ts) and the API applying it (test/hardening/).

/** A sample of what the URL rule refuses. */
export const REFUSED_URLS = [
  'http://127.0.0.1/x',
  'https://169.254.169.254/',
  'https://10.0.0.1/',
  'https://[::1]/',
  'https://localhost/',
  'file:///etc/passwd',
  'https://user:pass@example.com/',
];

/** A public https:// Slack webhook URL the rule accepts. */
export const SLACK_WEBHOOK_URL = 'https://hooks.slack.com/services/T/B/X';
