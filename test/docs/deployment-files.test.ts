/**
 * The Docker files stay in agreement with the code (no Docker daemon or image registry here): what
 * the Dockerfile copies exists and is not ignored, it runs as `node` with a /livez health
 * check, compose's Redis persists without eviction, config/local.json loads, and the dev
 * relay and dev calendar accept exactly the arguments compose gives them, and the two daemon
 * profiles, each with its own var volume and compose's environment, start on one Redis in
 * either order (the built daemon, on a redis-server of the test's own).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../src/adapters/config/config.js';
import { BINDING_FILE } from '../../src/adapters/log/log-binding.js';
import { quietConfigFile, ready, startAnchord, stop } from '../helpers/anchord-run.js';
import { privateRedis, tempDir } from '../helpers/harness.js';

const repo = resolve(import.meta.dirname, '../..');
const dockerfile = readFileSync(join(repo, 'Dockerfile'), 'utf8');
const compose = readFileSync(join(repo, 'docker-compose.yml'), 'utf8');
const dockerignore = readFileSync(join(repo, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
const anchorBin = join(repo, 'bin/aer1-anchor.js');
const tmp = mkdtempSync(join(tmpdir(), 'aer1-deploy-'));

const cleanups: Array<() => Promise<unknown>> = [];

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  rmSync(tmp, { recursive: true, force: true });
});

/** The JSON-style `command: [...]` array of a compose service. */
function composeCommand(service: string): string[] {
  const block = new RegExp(`\\n  ${service}:\\n((?:    .*\\n|\\n)*)`).exec(compose);
  if (!block) throw new Error(`docker-compose.yml has no service ${service}`);
  const cmd = /\n    command: (\[.*\])\n/.exec(`\n${block[1]!}`);
  if (!cmd) throw new Error(`service ${service} has no one-line command array`);
  return JSON.parse(cmd[1]!) as string[];
}

/** A compose service's `environment` (YAML merge keys applied), `${VAR:-default}` as its default and `${VAR:?message}` as `set`. */
function composeEnvironment(service: string): Record<string, string> {
  const doc = parse(compose, { merge: true }) as { services: Record<string, { environment?: Record<string, string> }> };
  const env = doc.services[service]?.environment;
  if (!env) throw new Error(`service ${service} has no environment map`);
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v).replace(/\$\{\w+:-([^}]*)\}/g, '$1').replace(/\$\{\w+:\?[^}]*\}/g, 'set')]));
}

/** Runs `aer1-anchor <args>` until its first stdout line, then SIGTERM; bounded. */
function firstLine(args: string[]): Promise<{ line: string; code: number | null; stderr: string }> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [anchorBin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let line: string | null = null;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      rej(new Error(`no output within 20 s: ${err}`));
    }, 20_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (line === null && out.includes('\n')) {
        line = out.split('\n')[0]!;
        child.kill('SIGTERM');
      }
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('close', (code) => {
      clearTimeout(timer);
      res({ line: line ?? '', code, stderr: err });
    });
  });
}

describe('Dockerfile', () => {
  it('copies only paths that exist and that .dockerignore lets through', () => {
    const sources = [...dockerfile.matchAll(/^COPY (?!--from)(.+)$/gm)].flatMap((m) => m[1]!.trim().split(/\s+/).slice(0, -1));
    expect(sources.length).toBeGreaterThan(3);
    for (const src of sources) {
      expect(existsSync(join(repo, src)), src).toBe(true);
      const top = src.split('/')[0]!;
      const ignored = dockerignore.includes(top) && !dockerignore.some((l) => l.startsWith('!') && src.startsWith(l.slice(1)));
      expect(ignored, `${src} is excluded by .dockerignore`).toBe(false);
    }
  });

  it('runs the daemon as node on 0.0.0.0:8787, with a /livez health check and the key folder as a volume', () => {
    expect(dockerfile).toMatch(/^FROM .* AS build$/m);
    expect(dockerfile).toMatch(/^FROM .* AS runtime$/m);
    expect(dockerfile).toMatch(/npm ci/);
    expect(dockerfile).toMatch(/npm run build/);
    expect(dockerfile).toMatch(/npm prune --omit=dev/);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^EXPOSE 8787$/m);
    expect(dockerfile).toMatch(/AER1_HTTP_HOST=0\.0\.0\.0/);
    expect(dockerfile).toMatch(/HEALTHCHECK [\s\S]*\/livez/);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["node", "bin\/aer1-anchord\.js"\]$/m);
    expect(existsSync(join(repo, 'bin/aer1-anchord.js'))).toBe(true);
    expect(dockerfile).toMatch(/^VOLUME \["\/app\/var"\]$/m);
  });

  it('installs no compiler toolchain: no package of the lockfile builds native code', () => {
    // sqlite (better-sqlite3) is gone; python3/make/g++ were only there to compile it
    const instructions = dockerfile.split('\n').filter((l) => !l.trimStart().startsWith('#')).join('\n');
    expect(instructions).not.toMatch(/apt-get|apk add|python3|\bg\+\+|\bmake\b/);
    const lock = JSON.parse(readFileSync(join(repo, 'package-lock.json'), 'utf8')) as { packages: Record<string, { hasInstallScript?: boolean; optional?: boolean; dev?: boolean }> };
    const scripted = Object.entries(lock.packages).filter(([, v]) => v.hasInstallScript).map(([p, v]) => `${p.replace(/^.*node_modules\//, '')}${v.optional ? ' (optional)' : ''}${v.dev ? ' (dev)' : ''}`);
    // esbuild (dev only: it bundles the /verify page) checks its prebuilt platform binary;
    // msgpackr-extract (BullMQ's optional faster msgpack) ships prebuilt binaries and is
    // skipped when none fits. Neither compiles anything.
    expect(scripted.sort()).toEqual(['esbuild (dev)', 'msgpackr-extract (optional)']);
  });
});

describe('docker-compose.yml', () => {
  it('runs Redis with the append-only file and noeviction on a volume', () => {
    expect(compose).toMatch(/"--appendonly", "yes"/);
    expect(compose).toMatch(/"--maxmemory-policy", "noeviction"/);
    expect(compose).toMatch(/redis-data:\/data/);
  });

  it('has a public profile on the built-in defaults and a local one on config/local.json, and requires the API token', () => {
    expect(existsSync(join(repo, 'config/default.json'))).toBe(false);
    expect(compose).toMatch(/profiles: \["public"\]/);
    expect(compose).toMatch(/profiles: \["local"\]/);
    expect(composeCommand('anchord-local')).toEqual(['--config', 'config/local.json']);
    expect(compose).toMatch(/AER1_HTTP_TOKEN: \$\{AER1_HTTP_TOKEN:\?/);
    expect(compose).toMatch(/"127\.0\.0\.1:\$\{AER1_HTTP_PUBLISH_PORT:-8787\}:8787"/);
  });

  it('config/local.json loads and points at the compose dev relay and dev calendar on regtest', () => {
    // over the built-in defaults (the schema's: there is no default file)
    const c = loadConfig({ file: join(repo, 'config/local.json'), env: {} });
    expect(c.nostr.relays).toEqual(['ws://dev-relay:7777']);
    expect(c.ots.calendars).toEqual(['http://dev-calendar:14788']);
    expect(c.ots.network).toBe('regtest');
    expect(c.ots.headersFile).toBe('/data/headers.json');
    expect(composeCommand('dev-calendar')).toContain('/data/headers.json');
  });

  it('the dev relay and dev calendar accept the arguments compose gives them (ports freed for the test)', async () => {
    const free = (args: string[]): string[] => args.map((a, i) => (args[i - 1] === '--port' ? '0' : args[i - 1] === '--host' ? '127.0.0.1' : args[i - 1] === '--headers-out' ? join(tmp, 'headers.json') : a));
    const relay = await firstLine(free(composeCommand('dev-relay')));
    expect(relay.line, relay.stderr).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    const calendar = await firstLine(free(composeCommand('dev-calendar')));
    expect(calendar.line, calendar.stderr).toBe('http://dev-calendar:14788');
    expect(existsSync(join(tmp, 'headers.json'))).toBe(true);
  });
});

describe('the two daemon profiles on one Redis', () => {
  it('each has its own redis.prefix, so after either one the other starts: each var folder holds the log of its own state', async () => {
    const redis = await privateRedis();
    cleanups.push(() => redis.stop());
    // each profile's compose environment on the test's Redis, in a folder of its own (its var
    // volume); the witnesses are the test's (a calendar nobody answers on), not the profile's
    const profiles = ['anchord', 'anchord-local'].map((service) => {
      const home = tempDir(`compose-${service}`);
      return { service, home, config: quietConfigFile(home, {}), env: { ...composeEnvironment(service), REDIS_URL: redis.url } };
    });
    const prefixes = profiles.map((p) => loadConfig({ file: p.config, env: p.env }).redis.prefix);
    expect(new Set(prefixes).size, `prefixes ${prefixes.join(', ')}`).toBe(2);
    // public, then local, then public again: each start after the other profile's
    for (const p of [profiles[0]!, profiles[1]!, profiles[0]!]) {
      const run = startAnchord(p.home, p.config, p.env, cleanups);
      await ready(run);
      await stop(run);
    }
    for (const [i, p] of profiles.entries()) {
      const binding = JSON.parse(readFileSync(join(p.home, 'var', 'log', prefixes[i]!, BINDING_FILE), 'utf8')) as { prefix: string };
      expect(binding.prefix, p.service).toBe(prefixes[i]);
    }
  });
});
