import type { Agent } from 'undici';
import { ipInCidrs, parseCidrs, parseIp, type ParsedCidrs } from '../../net/cidr.js';
import { createGuardedDispatcher } from '../../net/ssrf-guard/index.js';
import { redirectUriProblem } from './redirect-uris.js';

export interface ClientMetadataOptions {
  /** CIDRs the SSRF guard lets through (`mcp.clientMetadata.allowPrivateTargets`). */
  allowPrivateTargets: string[];
  timeoutMs: number;
  maxBytes: number;
  cacheSeconds: number;
}

export interface DocumentClient {
  clientId: string;
  clientName: string;
  redirectUris: string[];
}

/**
 * Why a client metadata document cannot be used. The message goes to the log (the error page
 * stays generic: it must not tell a prober what answers inside the network), with the setting
 * that decides it, when one does.
 */
export class ClientMetadataError extends Error {
  constructor(
    message: string,
    readonly setting?: string,
  ) {
    super(message);
  }
}

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, MCP 2025-11-25+):
 * the `client_id` is an https URL whose JSON names the client and its redirect URIs. Fetched
 * through the webhooks' SSRF guard (a client id is attacker-chosen and fetched from inside the
 * network), bounded in time and size, never following redirects, and cached in process.
 *
 * http:// is accepted only for an IP-literal host inside `allowPrivateTargets`: an operator who
 * lists a private range there (tests, a lab) already trusts what answers on it, and nothing on
 * the public Internet can be reached over plain http.
 */
export class ClientMetadataFetcher {
  private readonly cache = new Map<string, { client: DocumentClient; until: number }>();
  private readonly inFlight = new Map<string, Promise<DocumentClient>>();
  private readonly dispatcher: Agent;
  private readonly allow: ParsedCidrs;

  constructor(private readonly o: ClientMetadataOptions) {
    this.allow = parseCidrs(o.allowPrivateTargets, 'mcp.clientMetadata.allowPrivateTargets');
    this.dispatcher = createGuardedDispatcher({ allowPrivateTargets: this.allow, connectTimeoutMs: o.timeoutMs, lookupTimeoutMs: o.timeoutMs });
  }

  /** True when `clientId` has the shape of a metadata-document client id (an http(s) URL). */
  static looksLikeUrl(clientId: string): boolean {
    return clientId.startsWith('https://') || clientId.startsWith('http://');
  }

  async resolve(clientId: string): Promise<DocumentClient> {
    const cached = this.cache.get(clientId);
    if (cached && cached.until > Date.now()) return cached.client;
    let pending = this.inFlight.get(clientId);
    if (!pending) {
      pending = this.fetch(clientId).finally(() => this.inFlight.delete(clientId));
      this.inFlight.set(clientId, pending);
    }
    const client = await pending;
    if (this.o.cacheSeconds > 0) {
      if (this.cache.size >= 1000) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(clientId, { client, until: Date.now() + this.o.cacheSeconds * 1000 });
    }
    return client;
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }

  private checkUrl(clientId: string): URL {
    let url: URL;
    try {
      url = new URL(clientId);
    } catch {
      throw new ClientMetadataError('the client_id is not a valid URL');
    }
    if (url.href !== clientId) throw new ClientMetadataError('the client_id URL is not in canonical form (no dot segments, no default port, lower-case scheme and host)');
    if (url.hash !== '' || url.username !== '' || url.password !== '') throw new ClientMetadataError('the client_id URL must not contain a fragment or credentials');
    if (url.pathname === '/' || url.pathname === '') throw new ClientMetadataError('the client_id URL must have a path (https://client.example/oauth/metadata.json)');
    if (url.protocol === 'http:') {
      const ip = parseIp(url.hostname);
      if (!ip || !ipInCidrs(ip, this.allow))
        throw new ClientMetadataError(
          'the client_id URL must use https (http is accepted only for an IP address inside mcp.clientMetadata.allowPrivateTargets)',
          'mcp.clientMetadata.allowPrivateTargets',
        );
    } else if (url.protocol !== 'https:') throw new ClientMetadataError('the client_id URL must use https');
    return url;
  }

  private async fetch(clientId: string): Promise<DocumentClient> {
    const url = this.checkUrl(clientId);
    const signal = AbortSignal.timeout(this.o.timeoutMs);
    let text: string;
    try {
      const res = await this.dispatcher.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        headers: { accept: 'application/json' },
        signal,
        headersTimeout: this.o.timeoutMs,
        bodyTimeout: this.o.timeoutMs,
      });
      if (res.statusCode !== 200) {
        res.body.resume();
        throw new ClientMetadataError(
          `fetching the client metadata document answered ${res.statusCode}, not 200${res.statusCode >= 300 && res.statusCode < 400 ? ' (redirects are not followed)' : ''}`,
        );
      }
      const declared = Number(res.headers['content-length'] ?? 0);
      if (declared > this.o.maxBytes) {
        res.body.destroy();
        throw new ClientMetadataError(`the client metadata document is larger than ${this.o.maxBytes} bytes`, 'mcp.clientMetadata.maxBytes');
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > this.o.maxBytes) {
          res.body.destroy();
          throw new ClientMetadataError(`the client metadata document is larger than ${this.o.maxBytes} bytes`, 'mcp.clientMetadata.maxBytes');
        }
        chunks.push(chunk);
      }
      text = Buffer.concat(chunks).toString('utf8');
    } catch (error) {
      if (error instanceof ClientMetadataError) throw error;
      const e = error as Error & { code?: string };
      if (e.name === 'TimeoutError' || e.name === 'AbortError' || /timeout/i.test(e.code ?? ''))
        throw new ClientMetadataError(`the client metadata document did not arrive within ${this.o.timeoutMs} ms`, 'mcp.clientMetadata.timeoutMs');
      // The SSRF guard's refusals (loopback, private, link-local…) arrive here: the allowlist decides them.
      throw new ClientMetadataError(`the client metadata document could not be fetched: ${e.message}`, 'mcp.clientMetadata.allowPrivateTargets');
    }
    return this.read(text, clientId);
  }

  private read(text: string, clientId: string): DocumentClient {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      throw new ClientMetadataError('the client metadata document is not valid JSON');
    }
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new ClientMetadataError('the client metadata document must be a JSON object');
    const d = doc as Record<string, unknown>;
    if (d.client_id !== clientId) throw new ClientMetadataError("the client metadata document's client_id must equal the URL it was fetched from");
    if (!Array.isArray(d.redirect_uris) || d.redirect_uris.length === 0 || d.redirect_uris.length > 20) throw new ClientMetadataError('the client metadata document must list 1 to 20 redirect_uris');
    for (const uri of d.redirect_uris) {
      const problem = redirectUriProblem(uri);
      if (problem) throw new ClientMetadataError(`redirect_uris: ${problem}`);
    }
    const method = d.token_endpoint_auth_method;
    if (method !== undefined && method !== 'none') throw new ClientMetadataError(`token_endpoint_auth_method ${JSON.stringify(method)} is not supported: this server has public clients only ("none")`);
    if (d.client_secret !== undefined) throw new ClientMetadataError('a client metadata document must not contain a client_secret');
    const name = typeof d.client_name === 'string' && d.client_name.trim() !== '' ? d.client_name.trim().slice(0, 100) : new URL(clientId).host;
    return { clientId, clientName: name, redirectUris: d.redirect_uris as string[] };
  }
}
