import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './child-server.js';

export const SLAPD_SUFFIX = 'dc=example,dc=org';
export const SLAPD_ROOT_DN = `cn=admin,${SLAPD_SUFFIX}`;
export const SLAPD_ROOT_PASSWORD = 'admin-secret';

export interface TestSlapd {
  /** Plain LDAP (StartTLS offered). */
  port: number;
  /** LDAP over TLS, with a certificate for 127.0.0.1 signed by `caFile`. */
  tlsPort: number;
  /** The test CA's certificate (PEM). */
  caFile: string;
  /** Adds entries (LDIF) through the running server with ldapadd. */
  add(ldif: string): void;
  stop(): void;
}

/** A throwaway CA and a server certificate for 127.0.0.1 it signed, made with openssl. */
function makeCertificates(dir: string): { caFile: string; certFile: string; keyFile: string } {
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=Parley test CA', '-keyout', file('ca.key'), '-out', file('ca.pem'));
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', file('server.key'), '-out', file('server.csr'));
  writeFileSync(file('server.ext'), 'subjectAltName=IP:127.0.0.1\n');
  openssl('x509', '-req', '-in', file('server.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-CAcreateserial', '-days', '1', '-extfile', file('server.ext'), '-out', file('server.pem'));
  return { caFile: file('ca.pem'), certFile: file('server.pem'), keyFile: file('server.key') };
}

/**
 * A slapd of the test's own on free ports (plain and TLS): a throwaway slapd.conf, certificates and
 * MDB folder under /tmp, the memberof overlay (so users carry `memberOf` for the groups listing
 * them), stopped and removed by `stop`. scripts/ensure-slapd.sh installs slapd and ldap-utils when missing.
 */
export async function startSlapd(): Promise<TestSlapd> {
  execFileSync('bash', ['scripts/ensure-slapd.sh'], { stdio: 'inherit' });
  const dir = mkdtempSync(join(tmpdir(), 'parley-slapd-'));
  const data = join(dir, 'data');
  mkdirSync(data);
  const port = await freePort();
  const tlsPort = await freePort();
  const { caFile, certFile, keyFile } = makeCertificates(dir);
  writeFileSync(
    join(dir, 'slapd.conf'),
    [
      'include /etc/ldap/schema/core.schema',
      'include /etc/ldap/schema/cosine.schema',
      'include /etc/ldap/schema/inetorgperson.schema',
      `pidfile ${join(dir, 'slapd.pid')}`,
      `TLSCACertificateFile ${caFile}`,
      `TLSCertificateFile ${certFile}`,
      `TLSCertificateKeyFile ${keyFile}`,
      'modulepath /usr/lib/ldap',
      'moduleload back_mdb',
      'moduleload memberof',
      'database mdb',
      `suffix "${SLAPD_SUFFIX}"`,
      `rootdn "${SLAPD_ROOT_DN}"`,
      `rootpw ${SLAPD_ROOT_PASSWORD}`,
      `directory ${data}`,
      'maxsize 10485760',
      'overlay memberof',
      // Anyone may bind; reading needs a bind, as most directories are set up.
      'access to attrs=userPassword by self write by anonymous auth by * none',
      'access to * by users read by anonymous auth',
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn('/usr/sbin/slapd', ['-d', '0', '-f', join(dir, 'slapd.conf'), '-h', `ldap://127.0.0.1:${port}/ ldaps://127.0.0.1:${tlsPort}/`], { stdio: 'ignore' });
  const stop = () => {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForPort(port, child);
    await waitForPort(tlsPort, child);
  } catch (error) {
    stop();
    throw error;
  }
  const add = (ldif: string) => {
    execFileSync('ldapadd', ['-x', '-H', `ldap://127.0.0.1:${port}/`, '-D', SLAPD_ROOT_DN, '-w', SLAPD_ROOT_PASSWORD], { input: ldif, stdio: ['pipe', 'ignore', 'pipe'] });
  };
  add(`dn: ${SLAPD_SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\no: Example\ndc: example\n`);
  return { port, tlsPort, caFile, add, stop };
}

async function waitForPort(port: number, child: ChildProcess): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (child.exitCode !== null) throw new Error(`slapd exited with ${child.exitCode}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ port, host: '127.0.0.1' }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('slapd did not start listening');
}
