import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import type { Client, Entry } from 'ldapts';
import { badRequest, HttpError } from '../../core/http/errors.js';

/** The directory as the admin configured it (Admin Settings > General, LDAP; `LDAP_*`). */
export interface LdapDirectorySettings {
  host: string;
  port: number | null;
  /** `ldaps://` (the reference's `use_ssl`). */
  useTls: boolean;
  /** Plain `ldap://` upgraded with the StartTLS operation before any bind. */
  startTls: boolean;
  caCertFile: string | null;
  validateCert: boolean;
  ciphers: string | null;
  appDn: string;
  appPassword: string;
  searchBase: string;
  /** Extra filter the admin appends, e.g. `(memberOf=cn=chat,ou=groups,dc=example,dc=org)`; trusted as written. */
  searchFilters: string;
  attributeForUsername: string;
  attributeForMail: string;
  /** Read when group management is on. */
  attributeForGroups: string | null;
}

/** Who the directory says signed in. */
export interface LdapIdentity {
  email: string;
  /** The entry's `cn`. */
  name: string;
  /** Common names of the groups listed in the groups attribute (empty when group management is off). */
  groups: string[];
}

/** Reached the server, then nothing for this long: the sign-in fails rather than hangs. */
const CONNECT_TIMEOUT_MS = 5_000;
const OPERATION_TIMEOUT_MS = 10_000;

/** The reference's words first (`LDAP authentication failed.`), then why. */
const failed = (reason: string) => badRequest(`LDAP authentication failed: ${reason}`);
/** Unknown user and wrong password read the same, so the answer does not tell which accounts exist. */
const WRONG_CREDENTIALS = 'the username or password is incorrect.';

/** LDAP result codes meaning the bind's credentials were refused (invalidCredentials, inappropriateAuthentication). */
const REFUSED_BIND_CODES = new Set([49, 48]);

function isRefusedBind(error: unknown): boolean {
  return REFUSED_BIND_CODES.has((error as { code?: number }).code ?? -1);
}

/** An attribute's values, the name matched without regard to case (servers answer in their own spelling). */
function valuesOf(entry: Entry, attribute: string): string[] {
  const wanted = attribute.toLowerCase();
  const key = Object.keys(entry).find((name) => name.toLowerCase() === wanted && name !== 'dn');
  const value = key === undefined ? undefined : entry[key];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).map((item) => item.toString());
}

/**
 * The value of the first `cn` in a DN (`cn=Staff\, Paris,ou=groups,...` → `Staff, Paris`), or null:
 * RDNs split on unescaped commas, `\,`-style and `\2c`-style escapes (RFC 4514) undone.
 */
export function commonNameOfDn(dn: string): string | null {
  const rdns: string[] = [];
  let current = '';
  for (let i = 0; i < dn.length; i++) {
    const char = dn[i];
    if (char === '\\' && i + 1 < dn.length) {
      current += char + dn[i + 1];
      i += 1;
    } else if (char === ',') {
      rdns.push(current);
      current = '';
    } else current += char;
  }
  rdns.push(current);
  for (const rdn of rdns) {
    const trimmed = rdn.trim();
    if (!/^cn\s*=/i.test(trimmed)) continue;
    const raw = trimmed.slice(trimmed.indexOf('=') + 1).trim();
    const value = raw.replace(/\\([0-9a-fA-F]{2}|.)/g, (_, escaped: string) => (escaped.length === 2 ? String.fromCharCode(Number.parseInt(escaped, 16)) : escaped));
    return value || null;
  }
  return null;
}

async function tlsOptionsOf(settings: LdapDirectorySettings): Promise<ConnectionOptions> {
  // The name the certificate must carry; StartTLS upgrades a socket that knows no host of its own.
  const options: ConnectionOptions = { rejectUnauthorized: settings.validateCert, host: settings.host, ...(isIP(settings.host) ? {} : { servername: settings.host }) };
  if (settings.ciphers && settings.ciphers !== 'ALL') options.ciphers = settings.ciphers;
  if (settings.caCertFile) {
    try {
      options.ca = await readFile(settings.caCertFile);
    } catch {
      throw badRequest(`Failed to configure TLS for LDAP connection: the CA certificate file ${settings.caCertFile} cannot be read.`);
    }
  }
  return options;
}

/**
 * Opens a connection (TLS or StartTLS as configured) and runs `work` on it; unbinds after.
 * A server that cannot be reached is a 400 naming it, as the sign-in form shows the detail.
 */
async function withConnection<T>(settings: LdapDirectorySettings, tlsOptions: ConnectionOptions, work: (client: Client) => Promise<T>): Promise<T> {
  const { Client } = await import('ldapts');
  const port = settings.port ?? (settings.useTls ? 636 : 389);
  const address = `${settings.useTls ? 'ldaps' : 'ldap'}://${settings.host}:${port}`;
  const client = new Client({
    url: address,
    connectTimeout: CONNECT_TIMEOUT_MS,
    timeout: OPERATION_TIMEOUT_MS,
    // ldapts speaks TLS from the start whenever it is given TLS options: only for ldaps://.
    ...(settings.useTls ? { tlsOptions } : {}),
    strictDN: false,
  });
  try {
    if (settings.startTls && !settings.useTls) await client.startTLS(tlsOptions);
    return await work(client);
  } catch (error) {
    if (error instanceof HttpError) throw error;
    // An LDAP result code not handled above (unwillingToPerform for a locked account, busy, ...).
    if (typeof (error as { code?: unknown }).code === 'number') throw failed(`the directory refused the request (${(error as Error).message}).`);
    const code = String((error as { code?: unknown }).code ?? '');
    if (/CERT|SSL|TLS/.test(code)) {
      throw failed(`the TLS connection to ${address} was refused (${(error as Error).message}): an admin checks the CA certificate file and the certificate check in Admin Settings > General (LDAP).`);
    }
    if (/timed? ?out/i.test((error as Error).message)) throw failed(`the LDAP server at ${address} did not answer in time (${(error as Error).message}).`);
    throw failed(`the LDAP server at ${address} could not be reached (${(error as Error).message}).`);
  } finally {
    await client.unbind().catch(() => undefined);
  }
}

/**
 * `ldap_auth`: binds with the application account (anonymously without one), finds the user's
 * entry by the username attribute, then binds as that entry with the password. The username is
 * escaped for the filter (RFC 4515), so `*` or `)(uid=*` match nothing but themselves.
 */
export async function authenticateWithLdap(settings: LdapDirectorySettings, username: string, password: string): Promise<LdapIdentity> {
  const { Filter } = await import('ldapts');
  const tlsOptions = await tlsOptionsOf(settings);
  const login = username.toLowerCase();
  const attributes = [settings.attributeForUsername, settings.attributeForMail, 'cn', ...(settings.attributeForGroups ? [settings.attributeForGroups] : [])];

  const entry = await withConnection(settings, tlsOptions, async (client) => {
    if (settings.appDn) {
      try {
        await client.bind(settings.appDn, settings.appPassword);
      } catch (error) {
        if (!isRefusedBind(error)) throw error;
        throw failed("the application account's bind was refused: an admin checks its DN and password in Admin Settings > General (LDAP).");
      }
    }
    const filter = `(&(${settings.attributeForUsername}=${Filter.escape(login)})${settings.searchFilters})`;
    let entries: Entry[];
    try {
      ({ searchEntries: entries } = await client.search(settings.searchBase, { scope: 'sub', filter, attributes, sizeLimit: 2 }));
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      // noSuchObject: the search base does not exist; other result codes: a filter or permission problem of the settings.
      if (code === 32) throw failed(WRONG_CREDENTIALS);
      if (typeof code === 'number') throw failed(`the directory refused the search (${(error as Error).message}): an admin checks the search base and filter.`);
      throw error;
    }
    return entries[0] ?? null;
  });
  if (!entry) throw failed(WRONG_CREDENTIALS);
  // The directory's own answer must name this user (guards against a filter the admin's extra clause widened).
  if (!valuesOf(entry, settings.attributeForUsername).some((name) => name.toLowerCase() === login)) throw failed('User record mismatch.');
  const email = valuesOf(entry, settings.attributeForMail)[0]?.toLowerCase();
  if (!email) throw failed(`the directory entry has no e-mail address (attribute ${settings.attributeForMail}).`);

  await withConnection(settings, tlsOptions, async (client) => {
    try {
      await client.bind(entry.dn, password);
    } catch (error) {
      if (isRefusedBind(error)) throw failed(WRONG_CREDENTIALS);
      throw error;
    }
  });

  const groups = settings.attributeForGroups
    ? [...new Set(valuesOf(entry, settings.attributeForGroups).map(commonNameOfDn).filter((name): name is string => Boolean(name)))]
    : [];
  return { email, name: valuesOf(entry, 'cn')[0] ?? email, groups };
}
