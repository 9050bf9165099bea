// Connection settings as docs/operations.md describes them: a temporal.toml profile, TEMPORAL_* variables
// over it, WHALE_* over both (unit, no server); and a real worker process that finds its dev server through
// TEMPORAL_ADDRESS alone (no WHALE_TEMPORAL_* variable), seen polling by the server.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { loadTemporalConfig } from '../../temporal.config';
import { tlsOptions } from '../../workers/connection';
import { ROOT, waitFor } from '../workflows/env';
import { startServerEnv } from '../faults/server-env';

const work = mkdtempSync(path.join(tmpdir(), 'whale-envconfig-'));
after(() => rmSync(work, { recursive: true, force: true }));

const pem = (name: string) => {
  const file = path.join(work, name);
  writeFileSync(file, `-----BEGIN ${name}-----\n${name}\n-----END ${name}-----\n`);
  return file;
};
const ca = pem('ca.pem');
const cert = pem('client.pem');
const key = pem('client.key');
const tomlFile = path.join(work, 'temporal.toml');
writeFileSync(tomlFile, [
  '[profile.default]',
  'address = "10.1.2.3:7233"',
  'namespace = "lab"',
  '',
  '[profile.cloud]',
  'address = "whale.a1b2c.tmprl.cloud:7233"',
  'namespace = "whale.a1b2c"',
  'api_key = "key-from-file"',
  '[profile.cloud.tls]',
  `server_ca_cert_path = "${ca}"`,
  `client_cert_path = "${cert}"`,
  `client_key_path = "${key}"`,
  'server_name = "whale.a1b2c.tmprl.cloud"',
  '',
  '[profile.inline]',
  'address = "x:1"',
  '[profile.inline.tls]',
  'client_cert_data = "-----BEGIN CERTIFICATE-----"',
  '',
].join('\n'));

/** An environment with no user config file (HOME is an empty folder) plus the given variables. */
const env = (vars: Record<string, string>): NodeJS.ProcessEnv => ({ HOME: work, ...vars });

describe('connection settings: temporal.toml profile < TEMPORAL_* < WHALE_*', () => {
  it('no file and no variables: the dev server defaults', () => {
    const c = loadTemporalConfig({}, env({}));
    assert.equal(c.address, '127.0.0.1:7233');
    assert.equal(c.namespace, 'default');
    assert.equal(c.tls, false);
    assert.equal(c.apiKey, undefined);
    assert.equal(tlsOptions(c), undefined);
  });

  it('the default profile of the file TEMPORAL_CONFIG_FILE names', () => {
    const c = loadTemporalConfig({}, env({ TEMPORAL_CONFIG_FILE: tomlFile }));
    assert.deepEqual([c.address, c.namespace, c.tls, c.apiKey], ['10.1.2.3:7233', 'lab', false, undefined]);
  });

  it('the default file location ~/.config/temporalio/temporal.toml is read too', () => {
    const home = mkdtempSync(path.join(work, 'home-'));
    const dir = path.join(home, '.config', 'temporalio');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'temporal.toml'), '[profile.default]\naddress = "from-home:7233"\n');
    assert.equal(loadTemporalConfig({}, { HOME: home }).address, 'from-home:7233');
  });

  it('TEMPORAL_PROFILE picks a Cloud profile: address, namespace, API key, TLS files', () => {
    const c = loadTemporalConfig({}, env({ TEMPORAL_CONFIG_FILE: tomlFile, TEMPORAL_PROFILE: 'cloud' }));
    assert.equal(c.address, 'whale.a1b2c.tmprl.cloud:7233');
    assert.equal(c.namespace, 'whale.a1b2c');
    assert.equal(c.apiKey, 'key-from-file');
    assert.equal(c.tls, true);
    assert.deepEqual([c.tlsCaCertPath, c.tlsClientCertPath, c.tlsClientKeyPath, c.tlsServerName], [ca, cert, key, 'whale.a1b2c.tmprl.cloud']);
    const tls = tlsOptions(c);
    assert.ok(tls && typeof tls === 'object');
    assert.equal(tls.serverNameOverride, 'whale.a1b2c.tmprl.cloud');
    assert.match(String(tls.serverRootCACertificate), /BEGIN ca\.pem/);
    assert.match(String(tls.clientCertPair?.crt), /BEGIN client\.pem/);
    assert.match(String(tls.clientCertPair?.key), /BEGIN client\.key/);
  });

  it('TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE and TEMPORAL_API_KEY override the profile', () => {
    const c = loadTemporalConfig({}, env({ TEMPORAL_CONFIG_FILE: tomlFile, TEMPORAL_PROFILE: 'cloud', TEMPORAL_ADDRESS: 'eu-west-1.aws.api.temporal.io:7233', TEMPORAL_NAMESPACE: 'other.a1b2c', TEMPORAL_API_KEY: 'key-from-env' }));
    assert.deepEqual([c.address, c.namespace, c.apiKey], ['eu-west-1.aws.api.temporal.io:7233', 'other.a1b2c', 'key-from-env']);
  });

  it('TEMPORAL_TLS_* variables alone turn TLS on with their files; TEMPORAL_TLS=false turns it off', () => {
    const c = loadTemporalConfig({}, env({ TEMPORAL_TLS_CLIENT_CERT_PATH: cert, TEMPORAL_TLS_CLIENT_KEY_PATH: key }));
    assert.deepEqual([c.tls, c.tlsClientCertPath, c.tlsClientKeyPath], [true, cert, key]);
    const off = loadTemporalConfig({}, env({ TEMPORAL_CONFIG_FILE: tomlFile, TEMPORAL_PROFILE: 'cloud', TEMPORAL_TLS: 'false' }));
    assert.equal(off.tls, false);
    assert.equal(off.tlsClientCertPath, undefined);
  });

  it('WHALE_* variables override both the profile and TEMPORAL_*', () => {
    const c = loadTemporalConfig({}, env({
      TEMPORAL_CONFIG_FILE: tomlFile, TEMPORAL_PROFILE: 'cloud', TEMPORAL_ADDRESS: 'a:1', TEMPORAL_NAMESPACE: 'n1', TEMPORAL_API_KEY: 'k1',
      WHALE_TEMPORAL_ADDRESS: 'b:2', WHALE_TEMPORAL_NAMESPACE: 'n2', WHALE_TEMPORAL_API_KEY_ENV: 'MY_KEY', MY_KEY: 'k2',
      WHALE_TEMPORAL_TLS_SERVER_NAME: 'override.example', WHALE_TEMPORAL_TLS_CA: key,
    }));
    assert.deepEqual([c.address, c.namespace, c.apiKey, c.tlsServerName, c.tlsCaCertPath], ['b:2', 'n2', 'k2', 'override.example', key]);
  });

  it('bad profile input fails with a message naming the file and the fix', () => {
    assert.throws(() => loadTemporalConfig({}, env({ TEMPORAL_CONFIG_FILE: tomlFile, TEMPORAL_PROFILE: 'nope' })), /Temporal connection profile 'nope' from .*temporal\.toml: Profile 'nope' not found.*TEMPORAL_PROFILE/);
    const broken = path.join(work, 'broken.toml');
    writeFileSync(broken, '[profile.default\naddress = 1');
    assert.throws(() => loadTemporalConfig({}, env({ TEMPORAL_CONFIG_FILE: broken })), /cannot read the Temporal connection profile from .*broken\.toml/);
    assert.throws(() => loadTemporalConfig({}, env({ TEMPORAL_CONFIG_FILE: tomlFile, TEMPORAL_PROFILE: 'inline' })), /gives the TLS client cert inline.*client_cert_path \(TEMPORAL_TLS_CLIENT_CERT_PATH\)/);
  });
});

describe('a worker process finds its server through TEMPORAL_ADDRESS only', () => {
  let child: ChildProcess | undefined;
  after(() => void child?.kill('SIGKILL'));

  it('whale worker --queue orchestration polls a real dev server named by TEMPORAL_ADDRESS', async () => {
    const server = await startServerEnv();
    try {
      const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('WHALE_') && !k.startsWith('TEMPORAL_')));
      const queue = `envconfig-${process.pid}`;
      let out = '';
      child = spawn(process.execPath, ['bin/whale.js', 'worker', '--queue', 'orchestration'], {
        cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...base, HOME: work, TEMPORAL_ADDRESS: server.address, WHALE_QUEUE_ORCHESTRATION: queue, WHALE_ARTIFACT_DIR: path.join(work, 'artifacts') },
      });
      child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
      const proc = child;
      await waitFor('the worker to say it polls', async () => {
        if (proc.exitCode !== null) throw new Error(`the worker exited with ${proc.exitCode}:\n${out}`);
        return out.includes(`orchestration worker polling '${queue}' at ${server.address}`) ? true : undefined;
      }, 180_000);
      // The server itself sees the poller: the connection really went where TEMPORAL_ADDRESS points.
      const pollers = await waitFor('the server to list the worker as a poller', async () => {
        const r = await server.client.workflowService.describeTaskQueue({ namespace: 'default', taskQueue: { name: queue, kind: 1 }, taskQueueType: 1 });
        const ids = (r.pollers ?? []).map((p) => p.identity ?? '');
        return ids.some((id) => id === `whale-orchestration@${proc.pid}`) ? ids : undefined;
      }, 60_000);
      assert.ok(pollers.length >= 1);
      const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
      proc.kill('SIGINT');
      assert.equal(await exited, 0, out);
    } finally {
      await server.teardown();
    }
  });
});
