// End-to-end tests of the proxy: @nangohq/node's proxy, get, post, put, patch and delete, with
// every option, against the server and two fake provider APIs that echo what they receive.
//
// Environment (set by e2e/e2e_test.go, which starts the fake APIs; without them this file skips):
//   NANGO_HOST, NANGO_API_KEY   as for client.test.mjs
//   NANGO_E2E_UPSTREAM_URL      the fake API; the server's providers file points e2e-echo
//                               (base URL <upstream>/base/${connectionConfig.tenant}, API key in
//                               X-Api-Key) and e2e-oauth (token endpoint <upstream>/token) at it
//   NANGO_E2E_UPSTREAM2_URL     a second fake API on another port, the target of redirects and
//                               of baseUrlOverride
// The server must run with CONNECT_PROXY_ALLOW_PRIVATE_NETWORKS=true (the fakes are on 127.0.0.1).

import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Nango } from '@nangohq/node';

const host = process.env.NANGO_HOST;
const apiKey = process.env.NANGO_API_KEY;
const upstream = process.env.NANGO_E2E_UPSTREAM_URL;
const upstream2 = process.env.NANGO_E2E_UPSTREAM2_URL;
const skip = !host || !apiKey || !upstream || !upstream2 ? 'NANGO_E2E_UPSTREAM_URL and NANGO_E2E_UPSTREAM2_URL are not set (see e2e/doc.go)' : false;
const baseURL = (host ?? '').replace(/\/$/, '');

const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const echoKey = `e2e-echo-${run}`;
const oauthKey = `e2e-oauth-${run}`;
const connectionId = 'proxy-conn';
const upstreamKey = `echo-key-${run}`;

const nango = skip ? null : new Nango({ host, apiKey });

async function importConnection(body) {
    const res = await fetch(`${baseURL}/connections`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body)
    });
    const text = await res.text();
    assert.ok(res.ok, `POST /connections -> ${res.status} ${text}`);
}

// expectUpstreamError awaits promise, which must reject with an AxiosError of the given status.
async function expectError(promise, status) {
    let err;
    try {
        await promise;
    } catch (e) {
        err = e;
    }
    assert.ok(err, `expected HTTP ${status}, the call succeeded`);
    assert.ok(err.response, `expected an HTTP error, got ${err?.stack ?? err}`);
    assert.equal(err.response.status, status, `status: ${JSON.stringify(err.response.data)}`);
    return err;
}

// Options every call carries.
const target = { providerConfigKey: echoKey, connectionId };

function assertInjected(data) {
    assert.equal(data.headers['x-api-key'], upstreamKey, 'the connection API key is injected by the provider template');
    for (const [k, v] of Object.entries(data.headers)) {
        assert.ok(!String(v).includes(apiKey), `the server's API key reached the upstream in ${k}`);
    }
    for (const k of ['connection-id', 'provider-config-key', 'base-url-override', 'nango-activity-log-id', 'retries', 'retry-on']) {
        assert.equal(data.headers[k], undefined, `routing header ${k} was forwarded`);
    }
}

describe('proxy', { skip }, () => {
    before(async () => {
        await nango.createIntegration({ provider: 'e2e-echo', unique_key: echoKey });
        await nango.createIntegration({ provider: 'e2e-oauth', unique_key: oauthKey, credentials: { type: 'OAUTH2', client_id: 'cid', client_secret: 'csecret' } });
        await importConnection({ provider_config_key: echoKey, connection_id: connectionId, api_key: upstreamKey, connection_config: { tenant: 'acme' } });
        await importConnection({
            provider_config_key: oauthKey,
            connection_id: connectionId,
            access_token: 'stale-token',
            refresh_token: 'rt-1',
            expires_in: 7200
        });
    });

    it('proxy() with every option: path, query, prefixed headers, templated base URL, credentials', async () => {
        const res = await nango.proxy({
            ...target,
            method: 'GET',
            endpoint: '/items/a%2Fb?x=1',
            headers: { 'X-Custom': 'v', 'Content-Type': 'application/vnd.api+json', Accept: 'application/json' },
            params: { y: 2, arr: ['p', 'q'] },
            retries: 2,
            retryOn: [409],
            decompress: false,
            forwardHeadersOnRedirect: true,
            responseType: 'json'
        });
        assert.equal(res.status, 200);
        assert.equal(res.headers['x-upstream-echo'], '1', 'upstream response headers come back');
        const data = res.data;
        assert.equal(data.method, 'GET');
        assert.equal(data.path, '/base/acme/items/a%2Fb');
        assert.equal(data.query, 'x=1&y=2&arr=p%2Cq');
        assert.equal(data.headers['x-custom'], 'v');
        assert.equal(data.headers['content-type'], 'application/vnd.api+json');
        assertInjected(data);
    });

    it('headers: Authorization goes upstream; hop-by-hop and Proxy-* headers never do', async () => {
        const res = await nango.get({
            ...target,
            endpoint: '/hop',
            headers: {
                Authorization: 'Bearer mine',
                'Proxy-Authorization': 'Basic c2VjcmV0OnZhbHVl',
                'Proxy-Connection': 'keep-alive',
                'Keep-Alive': 'timeout=5',
                Upgrade: 'h2c',
                'X-Kept': 'yes'
            }
        });
        const seen = res.data.headers;
        assert.equal(seen.authorization, 'Bearer mine', "the caller's Authorization is forwarded");
        assert.equal(seen['x-kept'], 'yes');
        for (const k of ['proxy-authorization', 'proxy-connection', 'keep-alive', 'upgrade']) {
            assert.equal(seen[k], undefined, `${k} reached the provider`);
        }
    });

    it('proxy() with params as a string and PROPFIND, REPORT', async () => {
        for (const method of ['PROPFIND', 'REPORT']) {
            const res = await nango.proxy({ ...target, method, endpoint: 'dav/calendar', params: 'depth=1', data: '<propfind/>', headers: { 'Content-Type': 'application/xml' } });
            assert.equal(res.status, 200);
            assert.equal(res.data.method, method);
            assert.equal(res.data.path, '/base/acme/dav/calendar');
            assert.equal(res.data.query, 'depth=1');
            assert.equal(res.data.body, '<propfind/>');
            assertInjected(res.data);
        }
    });

    it('get, post, put, patch and delete send their method and body', async () => {
        const get = await nango.get({ ...target, endpoint: '/things', params: { page: 3 } });
        assert.equal(get.data.method, 'GET');
        assert.equal(get.data.query, 'page=3');
        assert.equal(get.data.body, '');
        for (const [fn, method] of [['post', 'POST'], ['put', 'PUT'], ['patch', 'PATCH'], ['delete', 'DELETE']]) {
            const data = { n: 1, s: 'ü & x', nested: { a: [1, 2] } };
            const res = await nango[fn]({ ...target, endpoint: `/things/${method.toLowerCase()}`, data, headers: { 'X-Verb': fn } });
            assert.equal(res.status, 200, fn);
            assert.equal(res.data.method, method);
            assert.equal(res.data.path, `/base/acme/things/${method.toLowerCase()}`);
            assert.deepEqual(JSON.parse(res.data.body), data, `${fn} body intact`);
            assert.match(res.data.headers['content-type'], /^application\/json/);
            assert.equal(res.data.headers['x-verb'], fn);
            assertInjected(res.data);
        }
    });

    it('baseUrlOverride sends the call to another base URL', async () => {
        const res = await nango.get({ ...target, endpoint: '/over', baseUrlOverride: `${upstream2}/override` });
        assert.equal(res.data.path, '/override/over');
        assertInjected(res.data);
    });

    it('upstream errors come back with their status and body unchanged', async () => {
        const err = await expectError(nango.get({ ...target, endpoint: '/status/418' }), 418);
        assert.equal(err.response.data.path, '/base/acme/status/418');
        assert.equal(err.response.headers['x-upstream-echo'], '1');
    });

    it('retries with retryOn until the upstream succeeds; no retries by default', async () => {
        const res = await nango.get({ ...target, endpoint: `/flaky/${run}-a?fail=2&code=409`, retries: 3, retryOn: [409] });
        assert.equal(res.status, 200);
        assert.equal(res.data.attempt, 3);
        const five = await nango.post({ ...target, endpoint: `/flaky/${run}-b?fail=1&code=503`, retries: 1, data: { keep: 'me' } });
        assert.equal(five.data.attempt, 2, '5xx is retried without retryOn');
        assert.deepEqual(JSON.parse(five.data.body), { keep: 'me' }, 'the body is replayed');
        const err = await expectError(nango.get({ ...target, endpoint: `/flaky/${run}-c?fail=1&code=503` }), 503);
        assert.equal(err.response.data.attempt, 1);
        const out = await expectError(nango.get({ ...target, endpoint: `/flaky/${run}-d?fail=5&code=500`, retries: 1 }), 500);
        assert.equal(out.response.data.attempt, 2, 'the last upstream response is returned when retries run out');
    });

    it('decompress asks for encodings the server can decode', async () => {
        const plain = await nango.get({ ...target, endpoint: '/gzip', decompress: true });
        assert.equal(plain.status, 200);
        assert.equal(plain.data.headers['accept-encoding'], 'gzip, deflate');
        const passed = await nango.get({ ...target, endpoint: '/gzip' });
        assert.equal(passed.status, 200);
        assert.equal(passed.data.path, '/base/acme/gzip', 'the gzip body passed through and axios decoded it');
        assert.match(passed.data.headers['accept-encoding'], /br/, "the caller's Accept-Encoding is forwarded");
    });

    it('forwardHeadersOnRedirect decides whether credentials follow a redirect to another host', async () => {
        const dropped = await nango.get({ ...target, endpoint: '/redirect-other' });
        assert.equal(dropped.data.path, '/landed');
        assert.equal(dropped.data.headers['x-api-key'], undefined, 'credentials do not follow to another host');
        const kept = await nango.get({ ...target, endpoint: '/redirect-other', forwardHeadersOnRedirect: true });
        assert.equal(kept.data.path, '/landed');
        assert.equal(kept.data.headers['x-api-key'], upstreamKey);
        const same = await nango.post({ ...target, endpoint: '/redirect-same', data: { r: 1 } });
        assert.equal(same.data.method, 'POST');
        assert.equal(same.data.headers['x-api-key'], upstreamKey, 'credentials follow a redirect on the same host');
        assert.deepEqual(JSON.parse(same.data.body), { r: 1 });
    });

    it('a 401 on an OAuth 2 connection refreshes the token once and retries', async () => {
        const res = await nango.post({ providerConfigKey: oauthKey, connectionId, endpoint: '/me', data: { who: 'me' } });
        assert.equal(res.status, 200);
        assert.equal(res.data.headers.authorization, 'Bearer fresh-token');
        assert.deepEqual(JSON.parse(res.data.body), { who: 'me' });
        const token = await nango.getToken(oauthKey, connectionId);
        assert.equal(token, 'fresh-token', 'the refreshed token is stored');
    });

    it("the server's own errors use the standard error body", async () => {
        let err = await expectError(nango.get({ providerConfigKey: echoKey, connectionId: 'nobody', endpoint: '/x' }), 404);
        assert.equal(err.response.data.error.code, 'not_found');
        err = await expectError(nango.get({ ...target, endpoint: '/x', retryOn: [] }), 400);
        assert.equal(err.response.data.error.code, 'invalid_headers');
        err = await expectError(nango.get({ ...target, endpoint: '/x', baseUrlOverride: 'http://169.254.169.254' }), 403);
        assert.equal(err.response.data.error.code, 'upstream_address_refused');
        err = await expectError(nango.get({ ...target, endpoint: '/x', baseUrlOverride: 'not a url' }), 400);
        assert.equal(err.response.data.error.code, 'invalid_headers');
    });
});
