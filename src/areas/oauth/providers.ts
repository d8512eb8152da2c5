import type { OAuthOptions } from './settings.js';

/** A sign-in provider as configured (config.py load_oauth_providers). */
export interface OAuthProvider {
  /** `google`, `microsoft`, `github` or `oidc`: the path segment of /oauth/{provider}/login. */
  name: string;
  /** The button's label (`/api/config` oauth.providers). */
  label: string;
  clientId: string;
  clientSecret: string;
  scope: string;
  /** The configured callback address; '' for this server's own /oauth/{provider}/login/callback. */
  redirectUri: string;
  /** OpenID discovery document; null for plain OAuth 2 (GitHub). */
  metadataUrl: string | null;
  /** Plain OAuth 2 endpoints (GitHub). */
  endpoints?: { authorization: string; token: string; userinfo: string; emails: string };
  /** The authorization server's metadata as stored with a tool server's client (MCP OAuth 2.1). */
  serverMetadata?: Record<string, unknown>;
  /** The claim naming the account at the provider. */
  subClaim: string;
  /** Where the picture is when the claim has none (Microsoft Graph). */
  pictureUrl: string | null;
  /** PKCE S256: always for OpenID providers here; GitHub ignores it. */
  pkce: boolean;
  /** 'client_secret_basic' | 'client_secret_post' | 'none' (OAUTH_TOKEN_ENDPOINT_AUTH_METHOD). */
  tokenEndpointAuthMethod: string | null;
  authorizeParams: Record<string, string>;
}

/** The persistent settings of the generic OpenID provider (OAUTH_CONFIG_KEYS' values). */
export interface GenericProviderSettings {
  clientId: string;
  clientSecret: string;
  providerUrl: string;
  redirectUri: string;
  scopes: string;
  providerName: string;
  codeChallengeMethod: string | null;
  tokenEndpointAuthMethod: string | null;
}

const GITHUB = {
  authorization: 'https://github.com/login/oauth/authorize',
  token: 'https://github.com/login/oauth/access_token',
  userinfo: 'https://api.github.com/user',
  emails: 'https://api.github.com/user/emails',
};

/**
 * The providers whose client is complete, in the reference's order. The generic provider is read
 * from the settings at each call, so an admin's change applies at once; a public client (no
 * secret) must use PKCE, as the reference requires OAUTH_CODE_CHALLENGE_METHOD for it.
 */
export function configuredProviders(options: OAuthOptions, generic: GenericProviderSettings): OAuthProvider[] {
  const providers: OAuthProvider[] = [];
  const base = { pictureUrl: null, pkce: true, tokenEndpointAuthMethod: null, authorizeParams: options.authorizeParams, subClaim: 'sub' };
  const { google, microsoft, github } = options;
  if (google.clientId && google.clientSecret) {
    providers.push({
      ...base,
      name: 'google',
      label: 'google',
      clientId: google.clientId,
      clientSecret: google.clientSecret,
      scope: google.scope,
      redirectUri: google.redirectUri,
      metadataUrl: 'https://accounts.google.com/.well-known/openid-configuration',
      authorizeParams: { ...options.authorizeParams, ...google.authorizeParams },
    });
  }
  if (microsoft.clientId && microsoft.clientSecret && microsoft.tenantId) {
    providers.push({
      ...base,
      name: 'microsoft',
      label: 'microsoft',
      clientId: microsoft.clientId,
      clientSecret: microsoft.clientSecret,
      scope: microsoft.scope,
      redirectUri: microsoft.redirectUri,
      metadataUrl: `${microsoft.loginBaseUrl}/${microsoft.tenantId}/v2.0/.well-known/openid-configuration?appid=${encodeURIComponent(microsoft.clientId)}`,
      pictureUrl: microsoft.pictureUrl,
    });
  }
  if (github.clientId && github.clientSecret) {
    providers.push({
      ...base,
      name: 'github',
      label: 'github',
      clientId: github.clientId,
      clientSecret: github.clientSecret,
      scope: github.scope,
      redirectUri: github.redirectUri,
      metadataUrl: null,
      endpoints: GITHUB,
      subClaim: 'id',
      pkce: false,
    });
  }
  const method = generic.codeChallengeMethod;
  if (generic.clientId && (generic.clientSecret || method) && generic.providerUrl) {
    providers.push({
      ...base,
      name: 'oidc',
      label: generic.providerName || 'SSO',
      clientId: generic.clientId,
      clientSecret: generic.clientSecret,
      scope: generic.scopes || 'openid email profile',
      redirectUri: generic.redirectUri,
      metadataUrl: generic.providerUrl,
      tokenEndpointAuthMethod: generic.tokenEndpointAuthMethod,
    });
  }
  return providers;
}
