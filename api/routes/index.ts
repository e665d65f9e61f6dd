import type { AnyRoute } from '../route.js';
import { apiKeyRoutes } from './api-keys/routes.js';
import { appointmentRoutes } from './appointments/routes.js';
import { agentRoutes } from './agents/routes.js';
import { bookingRoutes } from './bookings/routes.js';
import { callWebhookRoutes } from './call-webhook/routes.js';
import { callRoutes } from './calls/routes.js';
import { campaignRoutes } from './campaigns/routes.js';
import { chatRoutes } from './chats/routes.js';
import { complianceRoutes } from './compliance/routes.js';
import { contactRoutes } from './contacts/routes.js';
import { decisionRoutes } from './compliance/decisions.js';
import { contactSyncRoutes } from './contacts/sync-routes.js';
import { firmRoutes } from './firms/routes.js';
import { integrationRoutes } from './integrations/routes.js';
import { ringCentralRoutes } from './integrations/ringcentral-routes.js';
import { phoneWebhookRoutes } from './phone-webhook/routes.js';
import { leadRoutes } from './leads/routes.js';
import { sessionRoutes } from './sessions/routes.js';
import { utilRoutes } from './utils/routes.js';
import { webhookEndpointRoutes } from './webhook-endpoints/routes.js';
import { voiceRoutes } from './voices/routes.js';
import { workflowRoutes } from './workflows/routes.js';
import { widgetRoutes } from './widget/routes.js';
import { widgetSessionRoutes } from './widget/session-routes.js';
import { widgetKeyRoutes } from './widget-keys/routes.js';
import { widgetKeySnippetRoutes } from './widget-keys/snippet.js';

/** Every business route, by operation group. Operations routes are added by the app. */
export const businessRoutes: AnyRoute[] = [
  ...firmRoutes,
  ...apiKeyRoutes,
  ...sessionRoutes,
  ...voiceRoutes,
  ...agentRoutes,
  ...callRoutes,
  ...callWebhookRoutes,
  ...chatRoutes,
  // Before the leads routes: /api/leads/campaigns must not be read as the lead "campaigns".
  ...campaignRoutes,
  ...leadRoutes,
  ...workflowRoutes,
  ...widgetRoutes,
  ...widgetKeyRoutes,
  ...widgetKeySnippetRoutes,
  ...widgetSessionRoutes,
  ...bookingRoutes,
  ...appointmentRoutes,
  ...contactRoutes,
  ...contactSyncRoutes,
  ...decisionRoutes,
  ...integrationRoutes,
  ...ringCentralRoutes,
  ...phoneWebhookRoutes,
  ...complianceRoutes,
  ...utilRoutes,
  ...webhookEndpointRoutes,
];
