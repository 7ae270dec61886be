// Browser end-to-end test of the signed auth modes: NetSuite TBA and AWS
// SigV4 connected through @nangohq/frontend's headless auth() in headless
// Chromium, then a proxied call through each and a forced refresh.
// e2e/authmodes_signed_test.go (TestAuthModesSignedBrowser) starts the
// server and the fakes and sets NANGO_HOST, NANGO_API_KEY, E2E_PAGE_URL,
// E2E_CHROMIUM and E2E_SIGNED; without E2E_SIGNED (another Go test running
// every e2e/browser file) the suite is skipped.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const enabled = process.env.E2E_SIGNED === '1';
const host = (process.env.NANGO_HOST || '').replace(/\/$/, '');
const apiKey = process.env.NANGO_API_KEY;
const pageURL = process.env.E2E_PAGE_URL;
const TIMEOUT = 20_000;
let browser;

async function api(method, path, body, headers = {}) {
    const res = await fetch(`${host}${path}`, {
        method,
        headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json', ...headers },
        body: body === undefined ? undefined : JSON.stringify(body)
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function frontendPage() {
    const page = await browser.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    await page.goto(pageURL);
    await page.waitForFunction(() => window.frontendLoaded === true, null, { timeout: TIMEOUT });
    return { page, problems };
}

async function auth(page, integration, options) {
    const session = await api('POST', '/connect/sessions', { tags: { end_user_id: `signed-${integration}` }, allowed_integrations: [integration] });
    assert.equal(session.status, 201);
    return page.evaluate(
        ({ host, token, integration, options }) =>
            new window.Nango({ host, connectSessionToken: token }).auth(integration, options).then(
                (r) => ({ ok: r }),
                (e) => ({ err: { type: e.type, message: e.message } })
            ),
        { host, token: session.body.data.token, integration, options }
    );
}

describe('signed auth modes through @nangohq/frontend auth()', { skip: !enabled && 'E2E_SIGNED is not set' }, () => {
    before(async () => {
        const args = ['--disable-dev-shm-usage'];
        if (process.getuid?.() === 0) {
            args.push('--no-sandbox');
        }
        browser = await chromium.launch({ executablePath: process.env.E2E_CHROMIUM, headless: true, args });
    });
    after(async () => {
        await browser?.close();
    });

    it('connects NetSuite TBA, proxies a signed call, refreshes', async () => {
        const { page, problems } = await frontendPage();
        const bad = await auth(page, 'e2e-tba', { credentials: { token_id: 'tok-id', token_secret: 'wrong' }, params: { accountId: 'acme-1' } });
        assert.equal(bad.err?.type, 'connection_test_failed');
        const res = await auth(page, 'e2e-tba', { credentials: { token_id: 'tok-id', token_secret: 'tok-secret' }, params: { accountId: 'acme-1' } });
        assert.ok(res.ok?.connectionId, JSON.stringify(res));
        const id = res.ok.connectionId;
        const px = await api('GET', '/proxy/records/7', undefined, { 'Connection-Id': id, 'Provider-Config-Key': 'e2e-tba' });
        assert.equal(px.status, 200, JSON.stringify(px.body));
        const f = await api('GET', `/connections/${id}?provider_config_key=e2e-tba&force_refresh=true`);
        assert.equal(f.status, 200);
        assert.equal(f.body.credentials.type, 'TBA');
        assert.equal(f.body.credentials.token_id, 'tok-id');
        assert.deepEqual(problems, []);
    });

    it('connects AWS SigV4, proxies a signed call, refreshes', async () => {
        const { page, problems } = await frontendPage();
        const res = await auth(page, 'e2e-aws', { credentials: { type: 'AWS_SIGV4', role_arn: 'arn:aws:iam::123456789012:role/Partner', region: 'us-west-2' } });
        assert.ok(res.ok?.connectionId, JSON.stringify(res));
        const id = res.ok.connectionId;
        const h = { 'Connection-Id': id, 'Provider-Config-Key': 'e2e-aws' };
        const px = await api('POST', '/proxy/items', { name: 'x' }, h);
        assert.equal(px.status, 200, JSON.stringify(px.body));
        const f = await api('GET', `/connections/${id}?provider_config_key=e2e-aws&force_refresh=true`);
        assert.equal(f.status, 200);
        assert.equal(f.body.credentials.type, 'AWS_SIGV4');
        assert.equal(f.body.credentials.access_key_id, 'ASIATEMP2');
        assert.equal(f.body.credentials.region, 'us-west-2');
        const px2 = await api('GET', '/proxy/items', undefined, h);
        assert.equal(px2.status, 200, JSON.stringify(px2.body));
        assert.deepEqual(problems, []);
    });
});
