import { ClientMetadataError, ClientMetadataFetcher } from './client-metadata-document.js';
import type { OAuthStore } from '../oauth-store.js';

export interface KnownClient {
  clientId: string;
  clientName: string;
  redirectUris: string[];
  via: 'registration' | 'metadata-document';
}

/** Finds a client by id: a metadata-document URL is fetched, anything else must have registered. Throws ClientMetadataError with a reason for the error page. */
export class ClientDirectory {
  constructor(
    private readonly store: OAuthStore,
    private readonly documents: ClientMetadataFetcher,
  ) {}

  async find(clientId: string): Promise<KnownClient> {
    if (ClientMetadataFetcher.looksLikeUrl(clientId)) return { ...(await this.documents.resolve(clientId)), via: 'metadata-document' };
    const registered = clientId.length <= 200 ? await this.store.client(clientId) : null;
    if (!registered) throw new ClientMetadataError('this client is not registered here (unknown client_id); the application must register again');
    return { clientId, clientName: registered.client_name, redirectUris: registered.redirect_uris, via: 'registration' };
  }
}
