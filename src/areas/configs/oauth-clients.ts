import { ValvesCipher } from '../tools/valves-crypto.js';
import { bodyOf, callRemote, wellKnownUrls } from './remote.js';

type Values = Record<string, unknown>;

/**
 * OAuth 2.1 clients of MCP and tool servers (routers/configs.py
 * register_oauth_client, utils/oauth.py): the server's Protected Resource
 * Metadata (RFC 9728, from its 401 `WWW-Authenticate` or the well-known
 * locations) names the authorization server, whose metadata (RFC 8414 / OpenID)
 * gives the endpoints; with a `client_secret` those static credentials are used,
 * otherwise the client registers itself (RFC 7591) at the registration endpoint
 * (or `<origin>/register`). The answer's `oauth_client_info` is the client
 * information as a Fernet token keyed from OAUTH_CLIENT_INFO_ENCRYPTION_KEY
 * (default WEBUI_SECRET_KEY), as the reference stores it in the connection.
 */
export interface OAuthRegistration {
  url: string;
  client_id: string;
  client_secret?: string | null;
  oauth_server_url?: string | null;
  oauth_scope?: string | null;
}

const scopeText = (scope: string | null | undefined) => (scope ? scope.replace(/,/g, ' ').split(/\s+/).filter(Boolean).join(' ') : null);
const isObject = (value: unknown): value is Values => value !== null && typeof value === 'object' && !Array.isArray(value);

export class OAuthClients {
  private readonly cipher: ValvesCipher;

  constructor(
    encryptionKey: string,
    private readonly deadline: () => AbortSignal,
  ) {
    this.cipher = new ValvesCipher(encryptionKey, true);
  }

  private async json(url: string, init: { method?: string; json?: unknown } = {}): Promise<{ status: number; headers: Headers; body: unknown }> {
    const response = await callRemote(url, { ...init, headers: { accept: 'application/json' }, signal: this.deadline() });
    return { status: response.status, headers: response.headers, body: await bodyOf(response) };
  }

  /** RFC 9728: the resource, its scopes and its authorization servers (none found: empty). */
  private async protectedResource(serverUrl: string): Promise<{ resource: string | null; scopes: string[]; servers: string[] }> {
    const found = { resource: null as string | null, scopes: [] as string[], servers: [] as string[] };
    let candidates: string[] = [];
    try {
      const probe = await callRemote(serverUrl, { method: 'POST', json: { jsonrpc: '2.0', method: 'initialize', params: {}, id: 1 }, signal: this.deadline() });
      await probe.body?.cancel();
      const match = /resource_metadata=(?:"([^"]+)"|([^\s,]+))/.exec(probe.headers.get('www-authenticate') ?? '');
      if (match) candidates = [match[1] ?? match[2]];
    } catch {
      // an unreachable server still gets its well-known locations tried
    }
    if (candidates.length === 0) {
      const parsed = new URL(serverUrl);
      const path = parsed.pathname.replace(/\/+$/, '');
      if (path) candidates.push(`${parsed.origin}/.well-known/oauth-protected-resource${path}`);
      candidates.push(`${parsed.origin}/.well-known/oauth-protected-resource`);
    }
    for (const url of candidates) {
      try {
        const reply = await this.json(url);
        if (reply.status !== 200 || !isObject(reply.body)) continue;
        found.resource = typeof reply.body.resource === 'string' && reply.body.resource ? reply.body.resource : null;
        if (Array.isArray(reply.body.scopes_supported)) found.scopes = reply.body.scopes_supported.map(String);
        if (Array.isArray(reply.body.authorization_servers) && reply.body.authorization_servers.length > 0) {
          found.servers = reply.body.authorization_servers.map(String);
          break;
        }
      } catch {
        // try the next location
      }
    }
    return found;
  }

  /** The authorization server's metadata and where it was found, or nulls. */
  private async serverMetadata(discoveryUrls: string[]): Promise<{ metadata: Values | null; url: string | null }> {
    for (const url of discoveryUrls) {
      try {
        const reply = await this.json(url);
        if (reply.status === 200 && isObject(reply.body) && typeof reply.body.authorization_endpoint === 'string' && typeof reply.body.token_endpoint === 'string') {
          return { metadata: reply.body, url };
        }
      } catch {
        // try the next location
      }
    }
    return { metadata: null, url: null };
  }

  /** The encrypted client information for `redirectBase`'s callback. Throws on any failure (the route answers 400). */
  async register(form: OAuthRegistration, type: string | undefined, redirectBase: string): Promise<{ status: true; oauth_client_info: string }> {
    const clientKey = type ? `${type}:${form.client_id}` : form.client_id;
    const serverUrl = form.oauth_server_url || form.url;
    const redirectUri = `${redirectBase.replace(/\/+$/, '')}/oauth/clients/${clientKey}/callback`;
    const resource = await this.protectedResource(serverUrl);
    const discovery = (resource.servers.length > 0 ? resource.servers : [serverUrl]).flatMap((url) => wellKnownUrls(url));
    const { metadata, url: issuer } = await this.serverMetadata(discovery);
    const methods = metadata && Array.isArray(metadata.token_endpoint_auth_methods_supported) ? metadata.token_endpoint_auth_methods_supported.map(String) : [];
    const scope = scopeText(form.oauth_scope) ?? (resource.scopes.length > 0 ? resource.scopes.join(' ') : null);
    let info: Values;
    if (form.client_secret) {
      info = {
        client_id: form.client_id,
        client_secret: form.client_secret,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        scope,
        token_endpoint_auth_method: methods.length > 0 && !methods.includes('client_secret_post') ? methods[0] : 'client_secret_post',
      };
    } else {
      const request: Values = {
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: methods.length > 0 && !methods.includes('client_secret_post') ? methods[0] : 'client_secret_post',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        client_name: 'Open WebUI',
      };
      const requested = scope ?? (metadata && Array.isArray(metadata.scopes_supported) ? metadata.scopes_supported.map(String).join(' ') : null);
      if (requested) request.scope = requested;
      const endpoint = metadata && typeof metadata.registration_endpoint === 'string' ? metadata.registration_endpoint : `${new URL(serverUrl).origin}/register`;
      const reply = await this.json(endpoint, { method: 'POST', json: request });
      if (reply.status >= 400 || !isObject(reply.body) || typeof reply.body.client_id !== 'string') {
        throw new Error(`Dynamic client registration failed: ${typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body)}`);
      }
      info = Object.fromEntries(Object.entries(reply.body).map(([key, value]) => [key, value === '' ? null : value]));
    }
    const full = { ...info, issuer, server_metadata: metadata, resource: resource.resource };
    return { status: true, oauth_client_info: this.cipher.seal(full) as string };
  }
}
