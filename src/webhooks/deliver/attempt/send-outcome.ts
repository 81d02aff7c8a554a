/** What a sender answers for one attempt; the deliverer makes the log entry around it. */
import type { AttemptResult } from '../../delivery-contract.js';
import type { OutgoingRequestSection, TargetResponseSection, TransformationSection } from '../../log-entry.js';

export type SendOutcome = Pick<AttemptResult, 'retryable' | 'retryAfterMs'> & {
  status: 'success' | 'failed';
  statusCode: number | null;
  error: string | null;
  transformation?: TransformationSection;
  outgoingRequest?: OutgoingRequestSection;
  response?: TargetResponseSection;
};
