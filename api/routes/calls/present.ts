import type { Static } from '@sinclair/typebox';
import type { CallDoc } from '../../../core/domain/calls/calls.js';
import { callView as publicCall } from '../../../core/domain/calls/call-view.js';
import type { CallRecord } from './schema.js';

/** The call record as the API shows it (the shape call.* events carry too). */
export const callView: (call: CallDoc) => Static<typeof CallRecord> = publicCall;
