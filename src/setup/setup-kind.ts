import type { Validation } from '../http/document-routes.js';
import type { DocumentStore, StoredDocument } from '../store/document-store.js';

/** One top-level array of a setup file (`permissions`, `apps`, `webhooks`) and how to check and store it. */
export interface SetupKind {
  section: 'permissions' | 'apps' | 'webhooks';
  noun: string;
  /** Absent when only validating (`outrigger check`). */
  store?: DocumentStore<StoredDocument>;
  validate(candidate: Record<string, unknown>, existing: StoredDocument | undefined): Promise<Validation<StoredDocument>> | Validation<StoredDocument>;
  /** Cross-document checks over the whole resulting set (duplicate uris); returns problems. */
  checkSet?(docs: StoredDocument[]): string[];
  /** What is accepted but worth saying about a document `validate` answered (printed by check and apply). */
  warnings?(doc: StoredDocument): string[];
}
