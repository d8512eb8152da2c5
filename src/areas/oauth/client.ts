import type { Configuration, ServerMetadata } from 'openid-client';
import type { Clock } from '../../core/clock.js';
import type { OAuthProvider } from './providers.js';

type OpenIdClient = typeof import('openid-client');

/** openid-client is loaded at first sign-in, not at start (docs/architecture.md, start-up memory). */
let library: Promise<OpenIdClient> | null = null;
export const openIdClient = (): Promise<OpenIdClient> => (library ??= import('openid-client'));

/** How long a provider's discovery document is reused before it is read again. */
const METADATA_TTL_MS = 3_600_000;

/** A token endpoint answer as stored in an OAuth session (the reference's token dict). */
export type ProviderTokens = Record<string, unknown> & { access_token?: string; refresh_token?: string; id_token?: string; expires_at?: number };

/**
 * One provider's client, built with openid-client: discovery (cached an hour), PKCE, the code
 * exchange with its checks (state, nonce, the ID token's signature, issuer, audience and expiry),
 * the user-info request and refresh. Time is Parley's clock (openid-client's clock skew is set to
 * the difference), so expiry is testable. Plain-HTTP provider addresses are allowed as the admin
 * configured them (an internal Keycloak often is one).
 */
export class ProviderClients {
  private readonly metadata = new Map<string, { value: ServerMetadata; at: number }>();
  private readonly jwks = new Map<string, unknown>();

  constructor(
    private readonly clock: Clock,
    private readonly timeoutSeconds: () => number | null,
  ) {}

  private options(lib: OpenIdClient, url: string) {
    const timeout = this.timeoutSeconds();
    return { ...(timeout ? { timeout } : {}), ...(url.startsWith('http:') ? { execute: [lib.allowInsecureRequests] } : {}) };
  }

  /** The provider's server metadata: discovered for OpenID providers, fixed for GitHub. */
  private async serverMetadata(lib: OpenIdClient, provider: OAuthProvider): Promise<ServerMetadata> {
    if (provider.serverMetadata) return provider.serverMetadata as unknown as ServerMetadata;
    if (!provider.metadataUrl) {
      const endpoints = provider.endpoints!;
      return { issuer: new URL(endpoints.authorization).origin, authorization_endpoint: endpoints.authorization, token_endpoint: endpoints.token, userinfo_endpoint: endpoints.userinfo };
    }
    const cached = this.metadata.get(provider.metadataUrl);
    if (cached && Date.now() - cached.at < METADATA_TTL_MS) return cached.value;
    const discovered = await lib.discovery(new URL(provider.metadataUrl), provider.clientId, undefined, undefined, this.options(lib, provider.metadataUrl));
    const value = discovered.serverMetadata();
    this.metadata.set(provider.metadataUrl, { value, at: Date.now() });
    return value;
  }

  /** A configuration for one exchange; the JWKS fetched by earlier ones is carried over. */
  async configuration(provider: OAuthProvider): Promise<{ lib: OpenIdClient; config: Configuration }> {
    const lib = await openIdClient();
    const server = await this.serverMetadata(lib, provider);
    const skew = this.clock.now() - Math.floor(Date.now() / 1000);
    const auth =
      provider.tokenEndpointAuthMethod === 'client_secret_basic'
        ? lib.ClientSecretBasic(provider.clientSecret)
        : provider.tokenEndpointAuthMethod === 'none' || !provider.clientSecret
          ? lib.None()
          : lib.ClientSecretPost(provider.clientSecret);
    const config = new lib.Configuration(server, provider.clientId, { client_secret: provider.clientSecret || undefined, [lib.clockSkew]: skew }, auth);
    const options = this.options(lib, server.token_endpoint ?? server.issuer);
    for (const extension of options.execute ?? []) extension(config);
    if (options.timeout) config.timeout = options.timeout;
    const jwks = this.jwks.get(provider.name);
    if (jwks) lib.setJwksCache(config, jwks as Parameters<OpenIdClient['setJwksCache']>[1]);
    return { lib, config };
  }

  /** Keeps the key set a validation fetched, so the next sign-in does not fetch it again. */
  rememberKeys(provider: OAuthProvider, lib: OpenIdClient, config: Configuration): void {
    const jwks = lib.getJwksCache(config);
    if (jwks) this.jwks.set(provider.name, jwks);
  }

  /** Forgets a provider's discovery and keys (its keys rotated, or its settings changed). */
  forget(provider: OAuthProvider): void {
    if (provider.metadataUrl) this.metadata.delete(provider.metadataUrl);
    this.jwks.delete(provider.name);
  }
}
