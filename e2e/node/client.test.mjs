// End-to-end tests: the published @nangohq/node client (pinned to 0.71.10 in ../package.json),
// unchanged, against a running server of this project.
//
// Environment:
//   NANGO_HOST            base URL of the server, e.g. http://127.0.0.1:3003
//   NANGO_API_KEY         a full-access API key of the server's dev environment
//   CONNECT_DEV_ENV_VARS  the JSON object of name -> value the server was started with; the
//                         getEnvironmentVariables test expects exactly these pairs among the result
//
// Every name this file creates carries a per-run suffix, so reruns against the same server do
// not collide. e2e/e2e_test.go (TestNodeClient) builds and starts the server and runs this file.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Nango } from '@nangohq/node';

const host = process.env.NANGO_HOST;
const apiKey = process.env.NANGO_API_KEY;
if (!host || !apiKey) {
    throw new Error('NANGO_HOST and NANGO_API_KEY must be set (see e2e/doc.go)');
}
const baseURL = host.replace(/\/$/, '');

// run makes every created name unique to this process.
const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const uniq = (prefix) => `e2e-${prefix}-${run}`;

// The client is built once with apiKey and once with the deprecated secretKey alias; both must
// send the same bearer token.
const nango = new Nango({ host, apiKey });
const legacyNango = new Nango({ host, secretKey: apiKey });

// Integrations created by this file, deleted (best effort) when it ends.
const createdIntegrations = new Set();

after(async () => {
    for (const key of createdIntegrations) {
        try {
            await nango.deleteIntegration(key);
        } catch {
            // Already deleted by a test, renamed, or refused: nothing to clean.
        }
    }
});

// ---------------------------------------------------------------------------------------------
// Helpers

function describeErr(err) {
    if (err?.response) {
        return `${err.config?.method?.toUpperCase()} ${err.config?.url} -> ${err.response.status} ${JSON.stringify(err.response.data)}`;
    }
    return String(err?.stack ?? err);
}

// expectHttpError awaits promise, which must reject with an AxiosError whose status is one of
// statuses and whose body is {error: {code: <non-empty string>, ...}}; codes, when given, lists
// the acceptable codes. It returns the error.
async function expectHttpError(promise, statuses, codes) {
    let err;
    try {
        const value = await promise;
        assert.fail(`expected an HTTP error ${statuses.join('/')}, got success: ${JSON.stringify(value?.data ?? value)}`);
    } catch (e) {
        if (e instanceof assert.AssertionError) {
            throw e;
        }
        err = e;
    }
    assert.ok(err.isAxiosError && err.response, `expected an AxiosError with a response, got ${describeErr(err)}`);
    assert.ok(statuses.includes(err.response.status), `unexpected status: ${describeErr(err)}`);
    const code = err.response.data?.error?.code;
    assert.equal(typeof code, 'string', `error body has no error.code: ${describeErr(err)}`);
    assert.ok(code.length > 0, `error.code is empty: ${describeErr(err)}`);
    if (codes) {
        assert.ok(codes.includes(code), `error.code ${code} not in ${codes.join(', ')}: ${describeErr(err)}`);
    }
    if (err.response.data.error.message !== undefined) {
        assert.equal(typeof err.response.data.error.message, 'string');
    }
    return err;
}

const notFoundCodes = ['not_found', 'unknown_provider_config'];

function assertISO(value, what) {
    assert.equal(typeof value, 'string', `${what} should be an ISO timestamp string, got ${JSON.stringify(value)}`);
    assert.ok(!Number.isNaN(Date.parse(value)), `${what} is not a timestamp: ${value}`);
}

function assertSameInstant(actual, expected, what) {
    assertISO(actual, what);
    assert.equal(Date.parse(actual), Date.parse(expected), `${what}: ${actual} is not the instant ${expected}`);
}

function isPlainObject(v) {
    return typeof v === 'object' && v !== null && !Array.isArray(v);
}

// importConnection creates (or overwrites) a connection with existing credentials through
// POST /connections: the client 0.71.10 has no method for it, so this is a plain fetch with the
// same bearer key.
async function importConnection(body) {
    const res = await fetch(`${baseURL}/connections`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body)
    });
    const text = await res.text();
    assert.ok(res.ok, `POST /connections ${JSON.stringify(body)} -> ${res.status} ${text}`);
}

async function createIntegration(body) {
    const res = await nango.createIntegration(body);
    createdIntegrations.add(body.unique_key);
    return res;
}

function assertPublicIntegration(integration, { uniqueKey, provider }) {
    assert.ok(isPlainObject(integration), `integration should be an object: ${JSON.stringify(integration)}`);
    assert.equal(integration.unique_key, uniqueKey);
    assert.equal(integration.provider, provider);
    assert.equal(typeof integration.display_name, 'string');
    assert.ok(integration.display_name.length > 0, 'display_name should default to something non-empty');
    assert.equal(typeof integration.logo, 'string');
    assert.equal(typeof integration.forward_webhooks, 'boolean');
    assertISO(integration.created_at, 'created_at');
    assertISO(integration.updated_at, 'updated_at');
}

function assertListedConnection(c) {
    assert.equal(typeof c.id, 'number', `id should be a number: ${JSON.stringify(c)}`);
    assert.equal(typeof c.connection_id, 'string');
    assert.equal(typeof c.provider_config_key, 'string');
    assert.equal(typeof c.provider, 'string');
    assertISO(c.created, 'created');
    assert.ok(c.metadata === null || isPlainObject(c.metadata), `metadata should be an object or null: ${JSON.stringify(c.metadata)}`);
    assert.ok(Array.isArray(c.errors), 'errors should be an array');
    assert.ok(isPlainObject(c.tags), `tags should be an object: ${JSON.stringify(c.tags)}`);
    assert.equal(c.credentials, undefined, 'a listed connection must not carry credentials');
}

// pairs turns a list of connections into sorted "pck|connection_id" strings.
function pairs(connections) {
    return connections.map((c) => `${c.provider_config_key}|${c.connection_id}`).sort();
}

// ---------------------------------------------------------------------------------------------

describe('authentication', () => {
    it('rejects a wrong API key with 401 and an error code', async () => {
        const wrong = new Nango({ host, apiKey: `wrong-key-${run}` });
        await expectHttpError(wrong.listIntegrations(), [401]);
        await expectHttpError(wrong.getEnvironmentVariables(), [401]);
        await expectHttpError(wrong.listConnections(), [401]);
    });

    it('accepts the key through the deprecated secretKey option', async () => {
        const res = await legacyNango.listIntegrations();
        assert.ok(Array.isArray(res.configs));
    });
});

describe('providers', () => {
    it('listProviders returns the catalogue, with auth modes', async () => {
        const res = await nango.listProviders();
        assert.ok(Array.isArray(res.data), `expected {data: [...]}, got ${JSON.stringify(res).slice(0, 200)}`);
        assert.ok(res.data.length >= 4, `catalogue too small: ${res.data.length}`);
        const byName = new Map(res.data.map((p) => [p.name, p]));
        assert.equal(byName.size, res.data.length, 'provider names should be unique');
        for (const p of res.data) {
            assert.equal(typeof p.name, 'string');
            assert.equal(typeof p.auth_mode, 'string', `provider ${p.name} has no auth_mode`);
        }
        assert.equal(byName.get('github')?.auth_mode, 'OAUTH2');
        assert.equal(byName.get('openai')?.auth_mode, 'API_KEY');
        assert.equal(byName.get('twilio')?.auth_mode, 'BASIC');
        assert.ok(byName.has('slack'), 'slack should be in the catalogue');
    });

    it('listProviders({search}) filters by name', async () => {
        const all = await nango.listProviders();
        const res = await nango.listProviders({ search: 'git' });
        assert.ok(Array.isArray(res.data));
        const names = res.data.map((p) => p.name);
        assert.ok(names.includes('github'), `search=git should find github, got ${names.join(', ')}`);
        assert.ok(!names.includes('openai'), 'search=git should not return openai');
        assert.ok(res.data.length < all.data.length, 'search should narrow the list');
        for (const p of res.data) {
            const hay = `${p.name} ${p.display_name ?? ''}`.toLowerCase();
            assert.ok(hay.includes('git'), `provider ${p.name} (${p.display_name}) does not match "git"`);
        }
    });

    it('getProvider returns one provider, 404 for an unknown one', async () => {
        const res = await nango.getProvider({ provider: 'github' });
        assert.ok(isPlainObject(res.data));
        assert.equal(res.data.name, 'github');
        assert.equal(res.data.auth_mode, 'OAUTH2');
        const openai = await nango.getProvider({ provider: 'openai' });
        assert.equal(openai.data.name, 'openai');
        assert.equal(openai.data.auth_mode, 'API_KEY');
        await expectHttpError(nango.getProvider({ provider: `no-such-provider-${run}` }), [404]);
    });
});

describe('integrations', () => {
    const ghKey = uniq('gh');
    const oaKey = uniq('oa');
    const oaRenamed = uniq('oa-renamed');
    const oauth = { type: 'OAUTH2', client_id: `client-id-${run}`, client_secret: `client-secret-${run}`, scopes: 'repo,user' };

    it('createIntegration: OAuth2 github with credentials', async () => {
        const res = await createIntegration({
            provider: 'github',
            unique_key: ghKey,
            display_name: 'GitHub E2E',
            credentials: oauth,
            forward_webhooks: false
        });
        assertPublicIntegration(res.data, { uniqueKey: ghKey, provider: 'github' });
        assert.equal(res.data.display_name, 'GitHub E2E');
        assert.equal(res.data.forward_webhooks, false);
    });

    it('createIntegration: API-key openai without credentials', async () => {
        const res = await createIntegration({ provider: 'openai', unique_key: oaKey });
        assertPublicIntegration(res.data, { uniqueKey: oaKey, provider: 'openai' });
        assert.equal(res.data.forward_webhooks, true, 'forward_webhooks defaults to true');
    });

    it('createIntegration rejects an unknown provider', async () => {
        await expectHttpError(nango.createIntegration({ provider: `no-such-provider-${run}`, unique_key: uniq('bad') }), [400, 404]);
    });

    it('listIntegrations reshapes {data} into {configs}', async () => {
        const res = await nango.listIntegrations();
        assert.ok(Array.isArray(res.configs), `expected {configs: [...]}, got ${JSON.stringify(res).slice(0, 200)}`);
        const gh = res.configs.find((c) => c.unique_key === ghKey);
        const oa = res.configs.find((c) => c.unique_key === oaKey);
        assert.ok(gh, `${ghKey} missing from the list`);
        assert.ok(oa, `${oaKey} missing from the list`);
        assert.equal(gh.provider, 'github');
        assert.equal(oa.provider, 'openai');
        assertISO(gh.created_at, 'created_at');
        assert.equal(gh.credentials, undefined, 'the list must not carry credentials');
    });

    it('getIntegration without include carries no credentials', async () => {
        const res = await nango.getIntegration({ uniqueKey: ghKey });
        assertPublicIntegration(res.data, { uniqueKey: ghKey, provider: 'github' });
        assert.equal(res.data.display_name, 'GitHub E2E');
        assert.equal(res.data.credentials, undefined);
    });

    it('getIntegration with include=credentials returns the OAuth credentials', async () => {
        const res = await nango.getIntegration({ uniqueKey: ghKey }, { include: ['credentials'] });
        assertPublicIntegration(res.data, { uniqueKey: ghKey, provider: 'github' });
        const c = res.data.credentials;
        assert.ok(isPlainObject(c), `credentials missing: ${JSON.stringify(res.data)}`);
        assert.equal(c.type, 'OAUTH2');
        assert.equal(c.client_id, oauth.client_id);
        assert.equal(c.client_secret, oauth.client_secret);
        assert.equal(c.scopes, oauth.scopes);
        assert.ok(c.webhook_secret === null || c.webhook_secret === undefined || typeof c.webhook_secret === 'string');

        // An API-key integration has no integration credentials to show.
        const oa = await nango.getIntegration({ uniqueKey: oaKey }, { include: ['credentials'] });
        assert.equal(oa.data.unique_key, oaKey);
        assert.ok(oa.data.credentials === null || oa.data.credentials === undefined, `unexpected credentials: ${JSON.stringify(oa.data.credentials)}`);
    });

    it('getIntegration of an unknown key is 404', async () => {
        await expectHttpError(nango.getIntegration({ uniqueKey: uniq('missing') }), [404], notFoundCodes);
    });

    it('updateIntegration: display_name change leaves the other fields', async () => {
        const before = (await nango.getIntegration({ uniqueKey: ghKey }, { include: ['credentials'] })).data;
        const res = await nango.updateIntegration({ uniqueKey: ghKey }, { display_name: 'GitHub E2E renamed' });
        assertPublicIntegration(res.data, { uniqueKey: ghKey, provider: 'github' });
        assert.equal(res.data.display_name, 'GitHub E2E renamed');

        const afterUpdate = (await nango.getIntegration({ uniqueKey: ghKey }, { include: ['credentials'] })).data;
        assert.equal(afterUpdate.display_name, 'GitHub E2E renamed');
        assert.equal(afterUpdate.provider, 'github');
        assert.equal(afterUpdate.forward_webhooks, false);
        assert.equal(afterUpdate.logo, before.logo);
        assert.equal(afterUpdate.created_at, before.created_at);
        assert.ok(Date.parse(afterUpdate.updated_at) >= Date.parse(before.updated_at), 'updated_at went backwards');
        assert.deepEqual(afterUpdate.credentials, before.credentials);
    });

    it('updateIntegration: rename works while there are no connections', async () => {
        const res = await nango.updateIntegration({ uniqueKey: oaKey }, { unique_key: oaRenamed });
        createdIntegrations.add(oaRenamed);
        assertPublicIntegration(res.data, { uniqueKey: oaRenamed, provider: 'openai' });

        await expectHttpError(nango.getIntegration({ uniqueKey: oaKey }), [404], notFoundCodes);
        const renamed = await nango.getIntegration({ uniqueKey: oaRenamed });
        assert.equal(renamed.data.unique_key, oaRenamed);
        assert.equal(renamed.data.provider, 'openai');
        const list = await nango.listIntegrations();
        const keys = list.configs.map((c) => c.unique_key);
        assert.ok(keys.includes(oaRenamed));
        assert.ok(!keys.includes(oaKey));
    });

    it('deleteIntegration returns the axios response with {success: true}, then get is 404', async () => {
        const res = await nango.deleteIntegration(oaRenamed);
        assert.equal(res.status, 200);
        assert.deepEqual(res.data, { success: true });
        await expectHttpError(nango.getIntegration({ uniqueKey: oaRenamed }), [404], notFoundCodes);
        const list = await nango.listIntegrations();
        assert.ok(!list.configs.some((c) => c.unique_key === oaRenamed));
        await expectHttpError(nango.deleteIntegration(oaRenamed), [404], notFoundCodes);
    });

    it('updateIntegration refuses to rename an integration that has a connection', async () => {
        const key = uniq('gh-busy');
        await createIntegration({ provider: 'github', unique_key: key, credentials: oauth });
        const cid = uniq('busy-conn');
        await importConnection({ provider_config_key: key, connection_id: cid, access_token: 'busy-token', no_expiration: true });

        const err = await expectHttpError(nango.updateIntegration({ uniqueKey: key }, { unique_key: uniq('gh-busy-new') }), [400, 409]);
        assert.ok(err.response.data.error.code.length > 0);

        // Nothing changed: the old key and its connection are still there.
        const still = await nango.getIntegration({ uniqueKey: key });
        assert.equal(still.data.unique_key, key);
        const conn = await nango.getConnection(key, cid);
        assert.equal(conn.connection_id, cid);
        assert.equal(conn.provider_config_key, key);
    });
});

describe('connections', () => {
    const gh = uniq('conn-gh');
    const oa = uniq('conn-oa');
    const tw = uniq('conn-tw');
    const shared = uniq('shared'); // on gh and on oa
    const ghOnly = uniq('gh-only');
    const basic = uniq('basic');
    const spaced = `conn with spaces ${run}`;
    const userId = uniq('user');
    const email = `${run}@example.test`;
    const expiresAt = new Date(Date.now() + 2 * 24 * 3600 * 1000);
    expiresAt.setMilliseconds(0);
    const creds = {
        access_token: `gh-access-${run}`,
        refresh_token: `gh-refresh-${run}`,
        api_key: `sk-${run}`,
        username: `AC${run}`,
        password: `pw ${run} & more`
    };

    before(async () => {
        await createIntegration({
            provider: 'github',
            unique_key: gh,
            credentials: { type: 'OAUTH2', client_id: 'cid', client_secret: 'csecret', scopes: 'repo' }
        });
        await createIntegration({ provider: 'openai', unique_key: oa });
        await createIntegration({ provider: 'twilio', unique_key: tw });

        await importConnection({
            provider_config_key: gh,
            connection_id: shared,
            access_token: creds.access_token,
            refresh_token: creds.refresh_token,
            expires_at: expiresAt.toISOString(),
            tags: { end_user_id: userId, end_user_email: email, team: 'blue' }
        });
        await importConnection({ provider_config_key: oa, connection_id: shared, api_key: creds.api_key, metadata: { source: 'import', n: 1 } });
        await importConnection({
            provider_config_key: gh,
            connection_id: ghOnly,
            access_token: `gh-only-${run}`,
            no_expiration: true,
            tags: { team: 'green' }
        });
        await importConnection({ provider_config_key: tw, connection_id: basic, username: creds.username, password: creds.password });
        await importConnection({ provider_config_key: gh, connection_id: spaced, access_token: `spaced-${run}`, no_expiration: true });
    });

    it('listConnections, legacy positional form: exact connection id across integrations', async () => {
        const res = await nango.listConnections(shared);
        assert.ok(Array.isArray(res.connections), `expected {connections: [...]}, got ${JSON.stringify(res).slice(0, 200)}`);
        res.connections.forEach(assertListedConnection);
        assert.deepEqual(pairs(res.connections), [`${gh}|${shared}`, `${oa}|${shared}`].sort());
        const ghConn = res.connections.find((c) => c.provider_config_key === gh);
        assert.equal(ghConn.provider, 'github');
        assert.equal(ghConn.tags.team, 'blue');
        assert.equal(ghConn.tags.end_user_id, userId);
        const oaConn = res.connections.find((c) => c.provider_config_key === oa);
        assert.equal(oaConn.provider, 'openai');
        assert.deepEqual(oaConn.metadata, { source: 'import', n: 1 });

        const none = await nango.listConnections(uniq('nobody'));
        assert.deepEqual(none.connections, []);

        // Without arguments: every connection, ours included.
        const all = await nango.listConnections();
        const allPairs = pairs(all.connections);
        for (const p of [`${gh}|${shared}`, `${oa}|${shared}`, `${gh}|${ghOnly}`, `${tw}|${basic}`, `${gh}|${spaced}`]) {
            assert.ok(allPairs.includes(p), `${p} missing from the unfiltered list`);
        }
    });

    it('listConnections, object form: connectionId and integrationId (string and array)', async () => {
        const both = await nango.listConnections({ connectionId: shared, integrationId: [gh, oa] });
        assert.deepEqual(pairs(both.connections), [`${gh}|${shared}`, `${oa}|${shared}`].sort());

        const one = await nango.listConnections({ connectionId: shared, integrationId: oa });
        assert.deepEqual(pairs(one.connections), [`${oa}|${shared}`]);

        const byIntegrations = await nango.listConnections({ integrationId: [gh, tw] });
        byIntegrations.connections.forEach(assertListedConnection);
        assert.deepEqual(pairs(byIntegrations.connections), [`${gh}|${shared}`, `${gh}|${ghOnly}`, `${gh}|${spaced}`, `${tw}|${basic}`].sort());

        const byConnection = await nango.listConnections({ connectionId: ghOnly });
        assert.deepEqual(pairs(byConnection.connections), [`${gh}|${ghOnly}`]);
    });

    it('listConnections, object form: tags, userId, email, limit and page', async () => {
        // The client lowercases tag keys: Team -> tags[team].
        const blue = await nango.listConnections({ integrationId: gh, tags: { Team: 'blue' } });
        assert.deepEqual(pairs(blue.connections), [`${gh}|${shared}`]);
        const green = await nango.listConnections({ integrationId: [gh, oa, tw], tags: { team: 'green' } });
        assert.deepEqual(pairs(green.connections), [`${gh}|${ghOnly}`]);
        const nobody = await nango.listConnections({ integrationId: gh, tags: { team: `nobody-${run}` } });
        assert.deepEqual(nobody.connections, []);

        // tags.email is sent as tags[end_user_email].
        const byEmail = await nango.listConnections({ tags: { email } });
        assert.deepEqual(pairs(byEmail.connections), [`${gh}|${shared}`]);

        // userId is sent as endUserId and matches the end_user_id tag.
        const byUser = await nango.listConnections({ userId });
        assert.deepEqual(pairs(byUser.connections), [`${gh}|${shared}`]);

        // Three connections on gh; pages start at 0 (the client never sends page=0).
        const page0 = await nango.listConnections({ integrationId: gh, limit: 2 });
        assert.equal(page0.connections.length, 2);
        const page1 = await nango.listConnections({ integrationId: gh, limit: 2, page: 1 });
        assert.equal(page1.connections.length, 1);
        assert.deepEqual(pairs([...page0.connections, ...page1.connections]), [`${gh}|${shared}`, `${gh}|${ghOnly}`, `${gh}|${spaced}`].sort());
        const page2 = await nango.listConnections({ integrationId: gh, limit: 2, page: 2 });
        assert.deepEqual(page2.connections, []);
    });

    it('getConnection: OAuth2 credentials, refresh_token only on request', async () => {
        const conn = await nango.getConnection(gh, shared);
        assert.equal(typeof conn.id, 'number');
        assert.equal(conn.connection_id, shared);
        assert.equal(conn.provider_config_key, gh);
        assert.equal(conn.provider, 'github');
        assertISO(conn.created_at, 'created_at');
        assertISO(conn.updated_at, 'updated_at');
        assert.ok(isPlainObject(conn.connection_config), 'connection_config should be an object');
        assert.ok(isPlainObject(conn.tags));
        assert.equal(conn.tags.team, 'blue');

        const c = conn.credentials;
        assert.equal(c.type, 'OAUTH2');
        assert.equal(c.access_token, creds.access_token);
        assertSameInstant(c.expires_at, expiresAt.toISOString(), 'credentials.expires_at');
        assert.ok(isPlainObject(c.raw), `credentials.raw should be an object: ${JSON.stringify(c.raw)}`);
        assert.equal(c.refresh_token, undefined, 'refresh_token must be absent unless refreshToken=true');

        const withRefresh = await nango.getConnection(gh, shared, false, true);
        assert.equal(withRefresh.credentials.refresh_token, creds.refresh_token);
        assert.equal(withRefresh.credentials.access_token, creds.access_token);

        const never = await nango.getConnection(gh, ghOnly);
        assert.equal(never.credentials.type, 'OAUTH2');
        assert.equal(never.credentials.access_token, `gh-only-${run}`);
        assert.ok(!never.credentials.expires_at, `a no_expiration token has no expires_at: ${never.credentials.expires_at}`);

        const apiKeyConn = await nango.getConnection(oa, shared);
        assert.equal(apiKeyConn.provider, 'openai');
        assert.equal(apiKeyConn.credentials.type, 'API_KEY');
        assert.equal(apiKeyConn.credentials.apiKey, creds.api_key);
    });

    it('getConnection: 404 for an unknown connection or integration', async () => {
        await expectHttpError(nango.getConnection(gh, uniq('nobody')), [404], notFoundCodes);
        await expectHttpError(nango.getConnection(uniq('no-integration'), shared), [404], notFoundCodes);
        // The connection id exists, but on another integration.
        await expectHttpError(nango.getConnection(tw, shared), [404], notFoundCodes);
    });

    it('getToken: a string for OAuth2, the credentials object otherwise', async () => {
        assert.equal(await nango.getToken(gh, shared), creds.access_token);
        assert.equal(await nango.getToken(gh, ghOnly), `gh-only-${run}`);
        assert.deepEqual(await nango.getToken(oa, shared), { type: 'API_KEY', apiKey: creds.api_key });
        assert.deepEqual(await nango.getToken(tw, basic), { type: 'BASIC', username: creds.username, password: creds.password });
    });

    it('getRawTokenResponse returns credentials.raw', async () => {
        const raw = await nango.getRawTokenResponse(gh, shared);
        assert.ok(isPlainObject(raw), `raw should be an object: ${JSON.stringify(raw)}`);
        const conn = await nango.getConnection(gh, shared);
        assert.deepEqual(raw, conn.credentials.raw);
    });

    it('setMetadata replaces, updateMetadata merges, getMetadata reads (string and array ids)', async () => {
        const first = { plan: 'pro', seats: 3, nested: { a: 1 }, list: ['x', 'y'] };
        const res = await nango.setMetadata(gh, shared, first);
        assert.equal(res.status, 200);
        assert.deepEqual(res.data, { metadata: first, provider_config_key: gh, connection_id: shared });
        assert.deepEqual(await nango.getMetadata(gh, shared), first);

        // Replace, on two connections at once.
        const second = { only: 'this' };
        const res2 = await nango.setMetadata(gh, [shared, ghOnly], second);
        assert.equal(res2.status, 200);
        assert.deepEqual(res2.data, { metadata: second, provider_config_key: gh, connection_id: [shared, ghOnly] });
        assert.deepEqual(await nango.getMetadata(gh, shared), second);
        assert.deepEqual(await nango.getMetadata(gh, ghOnly), second);

        // Merge on one connection: only the given keys change.
        const res3 = await nango.updateMetadata(gh, shared, { extra: true, nested: { b: 2 } });
        assert.equal(res3.status, 200);
        assert.deepEqual(res3.data, { metadata: { extra: true, nested: { b: 2 } }, provider_config_key: gh, connection_id: shared });
        assert.deepEqual(await nango.getMetadata(gh, shared), { only: 'this', extra: true, nested: { b: 2 } });
        assert.deepEqual(await nango.getMetadata(gh, ghOnly), second, 'the other connection is untouched');

        // Merge on two connections.
        await nango.updateMetadata(gh, [shared, ghOnly], { only: 'that' });
        assert.deepEqual(await nango.getMetadata(gh, shared), { only: 'that', extra: true, nested: { b: 2 } });
        assert.deepEqual(await nango.getMetadata(gh, ghOnly), { only: 'that' });

        // The same connection id on another integration is a different connection.
        assert.deepEqual(await nango.getMetadata(oa, shared), { source: 'import', n: 1 });

        // Metadata shows in the list form too.
        const listed = await nango.listConnections({ connectionId: shared, integrationId: gh });
        assert.deepEqual(listed.connections[0].metadata, { only: 'that', extra: true, nested: { b: 2 } });

        // Unknown connection.
        await expectHttpError(nango.setMetadata(gh, uniq('nobody'), { a: 1 }), [400, 404]);
    });

    it('patchConnection: tags with lowercased keys and webhook_url_override', async () => {
        const hook = `https://hooks.example.test/e2e/${run}`;
        const res = await nango.patchConnection({ connectionId: ghOnly, provider_config_key: gh }, { tags: { Team: 'Red', Region: 'EU' }, webhook_url_override: hook });
        assert.deepEqual(res, { success: true });

        const conn = await nango.getConnection(gh, ghOnly);
        assert.equal(conn.tags.team, 'Red');
        assert.equal(conn.tags.region, 'EU');
        assert.ok(!('Team' in conn.tags) && !('Region' in conn.tags), `tag keys must be lowercased: ${JSON.stringify(conn.tags)}`);
        assert.equal(conn.webhook_url_override, hook);

        const red = await nango.listConnections({ integrationId: gh, tags: { team: 'Red' } });
        assert.deepEqual(pairs(red.connections), [`${gh}|${ghOnly}`]);

        // An empty string clears the override and leaves the tags.
        assert.deepEqual(await nango.patchConnection({ connectionId: ghOnly, provider_config_key: gh }, { webhook_url_override: '' }), { success: true });
        const cleared = await nango.getConnection(gh, ghOnly);
        assert.ok(!cleared.webhook_url_override, `webhook_url_override should be cleared: ${cleared.webhook_url_override}`);
        assert.equal(cleared.tags.team, 'Red');

        await expectHttpError(nango.patchConnection({ connectionId: uniq('nobody'), provider_config_key: gh }, { tags: { a: 'b' } }), [404], notFoundCodes);
    });

    it('connection ids with spaces survive the round trip', async () => {
        const conn = await nango.getConnection(gh, spaced);
        assert.equal(conn.connection_id, spaced);
        assert.equal(await nango.getToken(gh, spaced), `spaced-${run}`);

        const listed = await nango.listConnections({ connectionId: spaced });
        assert.deepEqual(pairs(listed.connections), [`${gh}|${spaced}`]);
        const legacy = await nango.listConnections(spaced);
        assert.deepEqual(pairs(legacy.connections), [`${gh}|${spaced}`]);

        await nango.setMetadata(gh, spaced, { spaced: 'yes' });
        await nango.updateMetadata(gh, spaced, { more: 1 });
        assert.deepEqual(await nango.getMetadata(gh, spaced), { spaced: 'yes', more: 1 });

        assert.deepEqual(await nango.patchConnection({ connectionId: spaced, provider_config_key: gh }, { tags: { Kind: 'spaced' } }), { success: true });
        assert.equal((await nango.getConnection(gh, spaced)).tags.kind, 'spaced');

        const del = await nango.deleteConnection(gh, spaced);
        assert.equal(del.status, 200);
        assert.equal(del.data.success, true);
        await expectHttpError(nango.getConnection(gh, spaced), [404], notFoundCodes);
    });

    it('deleteConnection, then getConnection is 404 and the list no longer has it', async () => {
        const res = await nango.deleteConnection(tw, basic);
        assert.equal(res.status, 200);
        assert.equal(res.data.success, true);
        await expectHttpError(nango.getConnection(tw, basic), [404], notFoundCodes);
        const listed = await nango.listConnections({ integrationId: tw });
        assert.ok(!listed.connections.some((c) => c.connection_id === basic));
        await expectHttpError(nango.deleteConnection(tw, basic), [404], notFoundCodes);

        // The other connection with the same id on another integration is untouched by deletes.
        const still = await nango.getConnection(oa, shared);
        assert.equal(still.connection_id, shared);
    });
});

describe('connect sessions', () => {
    // session reads a session back the way the connect UI does, with its token as bearer.
    async function session(token) {
        const res = await fetch(`${baseURL}/connect/session`, { headers: { Authorization: `Bearer ${token}` } });
        const json = await res.json();
        assert.equal(res.status, 200, `GET /connect/session: ${JSON.stringify(json)}`);
        return json.data;
    }

    it('createConnectSession needs neither tags nor end_user', async () => {
        for (const [body, tags] of [
            [{}, {}],
            [{ allowed_integrations: [] }, {}],
            [{ organization: { id: 'acme', display_name: 'Acme' } }, { organization_id: 'acme', organization_display_name: 'Acme' }],
            [{ tags: { End_User_Id: 'u1' } }, { end_user_id: 'u1' }],
        ]) {
            let res;
            try {
                res = await nango.createConnectSession(body);
            } catch (err) {
                assert.fail(`createConnectSession(${JSON.stringify(body)}): ${describeErr(err)}`);
            }
            const { token, connect_link, expires_at } = res.data;
            assert.match(token, /^nango_connect_session_[0-9a-f]{64}$/);
            assert.ok(connect_link.endsWith(`?session_token=${token}`), connect_link);
            assert.ok(Date.parse(expires_at) > Date.now(), expires_at);
            const s = await session(token);
            assert.deepEqual(s.tags, tags, `tags of the session created with ${JSON.stringify(body)}`);
        }
    });
});

describe('environment variables', () => {
    it('getEnvironmentVariables returns the configured name/value pairs', async (t) => {
        const raw = process.env.CONNECT_DEV_ENV_VARS;
        const vars = await nango.getEnvironmentVariables();
        assert.ok(Array.isArray(vars), `expected an array, got ${JSON.stringify(vars)}`);
        for (const v of vars) {
            assert.equal(typeof v.name, 'string');
            assert.equal(typeof v.value, 'string');
        }
        if (!raw) {
            t.skip('CONNECT_DEV_ENV_VARS is not set: only the shape was checked');
            return;
        }
        const expected = JSON.parse(raw);
        assert.ok(Object.keys(expected).length > 0, 'CONNECT_DEV_ENV_VARS should name at least one variable');
        const got = Object.fromEntries(vars.map((v) => [v.name, v.value]));
        for (const [name, value] of Object.entries(expected)) {
            assert.equal(got[name], value, `environment variable ${name}`);
        }
        assert.equal(vars.length, Object.keys(expected).length, `unexpected variables: ${JSON.stringify(vars)}`);
    });
});
