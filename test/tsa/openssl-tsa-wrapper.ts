/**
 * A TSA that is not ours: Debian's `openssl ts -reply`, with its own CA and TSA certificate
 * made by `openssl req`/`openssl x509` here, behind a small loopback HTTP wrapper written for
 * the tests (openssl has no HTTP server of its own). The wrapper only moves bytes: the
 * request goes to openssl as a file, openssl's `TimeStampResp` comes back as the answer.
 */
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface OpensslTsa {
  /** `…/v1` answers with ESSCertID (SHA-1, openssl's default); `…/v2` with ESSCertIDv2 (SHA-256). */
  readonly url: (ess: 'v1' | 'v2') => string;
  readonly caFile: string;
  readonly dir: string;
  close(): Promise<void>;
}

/** Makes the openssl CA and TSA certificate in `dir` (RSA 2048, the TSA's EKU critical timeStamping). */
export function makeOpensslPki(dir: string): void {
  const openssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], timeout: 20_000 });
  };
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/O=openssl test/CN=openssl test TSA CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'tsa.key', '-out', 'tsa.csr', '-subj', '/O=openssl test/CN=openssl test TSA');
  writeFileSync(join(dir, 'tsa-ext.cnf'), 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,nonRepudiation\nextendedKeyUsage=critical,timeStamping\n');
  openssl('x509', '-req', '-in', 'tsa.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-set_serial', '0x5a17', '-days', '2', '-extfile', 'tsa-ext.cnf', '-out', 'tsa.pem');
  writeFileSync(join(dir, 'tsaserial'), '01\n');
  const section = (name: string, alg: string): string =>
    `[ ${name} ]\ndir = ${dir}\nserial = $dir/tsaserial\ncrypto_device = builtin\nsigner_cert = $dir/tsa.pem\nsigner_key = $dir/tsa.key\n` +
    `signer_digest = sha256\ndefault_policy = 1.2.3.4.1\ndigests = sha256, sha384, sha512\naccuracy = secs:1\nordering = no\ntsa_name = yes\n` +
    `ess_cert_id_chain = no\ness_cert_id_alg = ${alg}\n`;
  writeFileSync(join(dir, 'tsa.cnf'), `[ tsa ]\ndefault_tsa = tsa_v1\n\n${section('tsa_v1', 'sha1')}\n${section('tsa_v2', 'sha256')}`);
}

export async function startOpensslTsa(dir: string): Promise<OpensslTsa> {
  makeOpensslPki(dir);
  let n = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = ++n;
      const query = join(dir, `q${id}.tsq`);
      const reply = join(dir, `r${id}.tsr`);
      writeFileSync(query, Buffer.concat(chunks));
      const section = req.url === '/v2' ? 'tsa_v2' : 'tsa_v1';
      run('openssl', ['ts', '-reply', '-config', join(dir, 'tsa.cnf'), '-section', section, '-queryfile', query, '-out', reply], { timeout: 10_000 })
        .then(() => {
          const body = readFileSync(reply);
          res.writeHead(200, { 'Content-Type': 'application/timestamp-reply', 'Content-Length': body.length }).end(body);
        })
        .catch((err: Error) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(err.message));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (ess) => `http://127.0.0.1:${port}/${ess}`,
    caFile: join(dir, 'ca.pem'),
    dir,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** `openssl ts -verify` of a bare token against `data`; resolves with openssl's exit code and output. */
export async function opensslVerifyToken(dir: string, token: Uint8Array, data: Uint8Array, caFile: string, name = 'token'): Promise<{ ok: boolean; output: string }> {
  const tokenFile = join(dir, `${name}.der`);
  const dataFile = join(dir, `${name}.data`);
  writeFileSync(tokenFile, token);
  writeFileSync(dataFile, data);
  try {
    const { stdout, stderr } = await run('openssl', ['ts', '-verify', '-token_in', '-in', tokenFile, '-data', dataFile, '-CAfile', caFile], { timeout: 10_000 });
    return { ok: /Verification: OK/.test(stdout), output: stdout + stderr };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}
