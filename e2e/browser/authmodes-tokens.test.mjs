// Browser end-to-end test of the token modes (TWO_STEP, JWT, SIGNATURE,
// BILL) through @nangohq/frontend's headless auth(), and of every POST mode
// of the pre-built connect UI (those four, TBA and AWS_SIGV4) through its
// forms, in headless Chromium. e2e/authmodes_tokens_test.go
// (TestAuthModesTokensBrowser) starts the server and the fakes and sets
// NANGO_HOST, NANGO_API_KEY, E2E_PAGE_URL, E2E_CHROMIUM, E2E_TOKENS and
// E2E_TOKENS_FIXTURES (the values the fakes accept, keys included); without
// E2E_TOKENS (another Go test running every e2e/browser file) the suite is
// skipped.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const enabled = process.env.E2E_TOKENS === '1';
const host = (process.env.NANGO_HOST || '').replace(/\/$/, '');
const apiKey = process.env.NANGO_API_KEY;
const pageURL = process.env.E2E_PAGE_URL;
const fx = enabled ? JSON.parse(process.env.E2E_TOKENS_FIXTURES) : {};
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

async function session(endUser, integrations) {
    const s = await api('POST', '/connect/sessions', { tags: { end_user_id: endUser }, allowed_integrations: integrations });
    assert.equal(s.status, 201, JSON.stringify(s.body));
    return s.body.data;
}

async function frontendPage() {
    const page = await browser.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    await page.goto(pageURL);
    await page.waitForFunction(() => window.frontendLoaded === true, null, { timeout: TIMEOUT });
    return { page, problems };
}

// auth runs the frontend's headless auth() on the test page.
async function auth(page, integration, options) {
    const s = await session(`tokens-${integration}`, [integration]);
    return page.evaluate(
        ({ host, token, integration, options }) =>
            new window.Nango({ host, connectSessionToken: token }).auth(integration, options).then(
                (r) => ({ ok: r }),
                (e) => ({ err: { type: e.type, message: e.message } })
            ),
        { host, token: s.token, integration, options }
    );
}

// connections lists the connections of an integration.
async function connections(integration) {
    const r = await api('GET', `/connections?integrationId=${integration}`);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.connections;
}

// proxyRefreshProxy proxies a GET through the connection, forces a refresh,
// and proxies again: the token read before and after must differ, and the
// fake (which only accepts the newest token) checks each call.
async function proxyRefreshProxy(integration, id, path, tokenOf) {
    const h = { 'Connection-Id': id, 'Provider-Config-Key': integration };
    const px = await api('GET', `/proxy${path}`, undefined, h);
    assert.equal(px.status, 200, JSON.stringify(px.body));
    const before = await api('GET', `/connections/${id}?provider_config_key=${integration}`);
    assert.equal(before.status, 200);
    const after = await api('GET', `/connections/${id}?provider_config_key=${integration}&force_refresh=true`);
    assert.equal(after.status, 200, JSON.stringify(after.body));
    assert.ok(tokenOf(before.body.credentials), JSON.stringify(before.body.credentials));
    assert.notEqual(tokenOf(after.body.credentials), tokenOf(before.body.credentials), 'a forced refresh kept the token');
    const px2 = await api('GET', `/proxy${path}`, undefined, h);
    assert.equal(px2.status, 200, JSON.stringify(px2.body));
    return after.body.credentials;
}

describe('token modes through @nangohq/frontend auth()', { skip: !enabled && 'E2E_TOKENS is not set' }, () => {
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

    it('TWO_STEP: netsuite-client-credentials with its key in assertionOption', async () => {
        const { page, problems } = await frontendPage();
        const res = await auth(page, 'netsuite-client-credentials', {
            credentials: { type: 'TWO_STEP', clientId: fx.nsClientID, certificateId: fx.nsCertificateID },
            params: { accountId: fx.nsAccount },
            assertionOption: { privateKey: fx.nsPrivateKey }
        });
        assert.ok(res.ok?.connectionId, JSON.stringify(res));
        const creds = await proxyRefreshProxy('netsuite-client-credentials', res.ok.connectionId, '/record/v1/customer', (c) => c.token);
        assert.equal(creds.type, 'TWO_STEP');
        assert.equal(creds.clientId, fx.nsClientID);
        assert.match(creds.token, /^ns-at-\d+$/);
        assert.ok(creds.expires_at);
        assert.deepEqual(problems, []);
    });

    it('JWT: apple-app-store signed with the end user ES256 key', async () => {
        const { page, problems } = await frontendPage();
        const res = await auth(page, 'apple-app-store', {
            credentials: { type: 'JWT', issuerId: fx.appleIssuer, privateKeyId: fx.appleKeyID, privateKey: fx.applePrivateKey },
            params: { scope: 'GET /v1/apps' }
        });
        assert.ok(res.ok?.connectionId, JSON.stringify(res));
        const creds = await proxyRefreshProxy('apple-app-store', res.ok.connectionId, '/v1/apps', (c) => c.token);
        assert.equal(creds.type, 'JWT');
        assert.equal(creds.issuerId, fx.appleIssuer);
        const claims = JSON.parse(Buffer.from(creds.token.split('.')[1], 'base64url').toString());
        assert.deepEqual(claims.scope, ['GET /v1/apps']);
        assert.deepEqual(problems, []);
    });

    it('SIGNATURE: emarsys WSSE', async () => {
        const { page, problems } = await frontendPage();
        const bad = await auth(page, 'emarsys', { credentials: { type: 'SIGNATURE', username: fx.wsseUser, password: 'not a secret!' } });
        assert.equal(bad.err?.type, 'invalid_credentials', JSON.stringify(bad));
        const res = await auth(page, 'emarsys', { credentials: { type: 'SIGNATURE', username: fx.wsseUser, password: fx.wsseSecret } });
        assert.ok(res.ok?.connectionId, JSON.stringify(res));
        const creds = await proxyRefreshProxy('emarsys', res.ok.connectionId, '/api/v2/contact', (c) => c.token);
        assert.equal(creds.type, 'SIGNATURE');
        assert.equal(creds.username, fx.wsseUser);
        assert.deepEqual(problems, []);
    });

    it('BILL: the Bill login', async () => {
        const { page, problems } = await frontendPage();
        const res = await auth(page, 'bill', {
            credentials: { type: 'BILL', username: fx.billUser, password: fx.billPassword, organization_id: fx.billOrg, dev_key: fx.billDevKey }
        });
        assert.ok(res.ok?.connectionId, JSON.stringify(res));
        const creds = await proxyRefreshProxy('bill', res.ok.connectionId, '/v3/vendors', (c) => c.session_id);
        assert.equal(creds.type, 'BILL');
        assert.equal(creds.organization_id, fx.billOrg);
        assert.equal(creds.user_id, 'user-9');
        assert.deepEqual(problems, []);
    });
});

describe('every POST mode through the connect UI form', { skip: !enabled && 'E2E_TOKENS is not set' }, () => {
    let context;
    let page;
    const problems = [];
    let ids;

    before(async () => {
        const args = ['--disable-dev-shm-usage'];
        if (process.getuid?.() === 0) {
            args.push('--no-sandbox');
        }
        browser = await chromium.launch({ executablePath: process.env.E2E_CHROMIUM, headless: true, args });
        context = await browser.newContext({ viewport: { width: 520, height: 900 } });
        page = await context.newPage();
        page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
        page.on('console', (m) => {
            if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) {
                problems.push(`CSP: ${m.text()}`);
            }
        });
        ids = {};
        for (const it of ['netsuite-client-credentials', 'apple-app-store', 'emarsys', 'bill', 'netsuite-tba', 'aws-sigv4']) {
            ids[it] = new Set((await connections(it)).map((c) => c.connection_id));
        }
    });
    after(async () => {
        await browser?.close();
    });

    // openForm opens a connect_link for one integration and returns its form.
    async function openForm(integration) {
        const s = await session(`ui-${integration}`, [integration]);
        await page.goto(s.connect_link);
        const form = page.locator(`form[data-integration="${integration}"]`);
        await form.waitFor({ timeout: TIMEOUT });
        return form;
    }

    // fields lists the form's inputs as [name, label] in order.
    async function fields(form) {
        return form.locator('.field').evaluateAll((els) =>
            els.map((el) => {
                const input = el.querySelector('input');
                const label = el.querySelector('label');
                return [input.name, label.firstChild.textContent, input.type];
            })
        );
    }

    async function submitAndWait(form) {
        await form.locator('button[type="submit"]').click();
        const ok = page.locator('[data-screen="success"] .success');
        const err = form.locator('.error:visible');
        await Promise.race([ok.waitFor({ timeout: TIMEOUT }), err.waitFor({ timeout: TIMEOUT })]);
        if (await err.count()) {
            assert.fail(`the form shows an error: ${await err.textContent()}`);
        }
        const id = await ok.getAttribute('data-connection-id');
        assert.ok(id);
        return id;
    }

    async function mustBeNew(integration, id) {
        const list = (await connections(integration)).map((c) => c.connection_id);
        assert.ok(list.includes(id), `${integration}: ${id} not in ${list}`);
        assert.ok(!ids[integration].has(id));
    }

    it('TWO_STEP: the credentials, the connection config and the assertion option fields', async () => {
        const form = await openForm('netsuite-client-credentials');
        assert.deepEqual(await fields(form), [
            ['accountId', 'Account ID', 'text'],
            ['certificateId', 'Certificate ID', 'text'],
            ['clientId', 'Client ID', 'text'],
            ['privateKey', 'Private Key', 'text']
        ]);
        await form.locator('input[name="accountId"]').fill(fx.nsAccount);
        await form.locator('input[name="clientId"]').fill(fx.nsClientID);
        await form.locator('input[name="certificateId"]').fill(fx.nsCertificateID);
        // A PEM pasted into a one-line input loses its line breaks: the server takes it so.
        await form.locator('input[name="privateKey"]').fill(fx.nsPrivateKey.replace(/\n/g, ' '));
        const id = await submitAndWait(form);
        await mustBeNew('netsuite-client-credentials', id);
        const c = await api('GET', `/connections/${id}?provider_config_key=netsuite-client-credentials`);
        assert.equal(c.body.credentials.certificateId, fx.nsCertificateID);
        assert.equal(c.body.connection_config.accountId, fx.nsAccount);
        const px = await api('GET', '/proxy/record/v1/customer', undefined, { 'Connection-Id': id, 'Provider-Config-Key': 'netsuite-client-credentials' });
        assert.equal(px.status, 200, JSON.stringify(px.body));
    });

    it('JWT: the provider credentials and its optional scope', async () => {
        const form = await openForm('apple-app-store');
        assert.deepEqual(await fields(form), [
            ['scope', 'Scope', 'text'],
            ['issuerId', 'Issuer ID', 'text'],
            ['privateKey', 'Private Key', 'password'],
            ['privateKeyId', 'Key ID', 'text']
        ]);
        await form.locator('input[name="issuerId"]').fill(fx.appleIssuer);
        await form.locator('input[name="privateKeyId"]').fill(fx.appleKeyID);
        await form.locator('input[name="privateKey"]').fill(fx.applePrivateKey.replace(/\n/g, ' '));
        const id = await submitAndWait(form);
        await mustBeNew('apple-app-store', id);
        const px = await api('GET', '/proxy/v1/apps', undefined, { 'Connection-Id': id, 'Provider-Config-Key': 'apple-app-store' });
        assert.equal(px.status, 200, JSON.stringify(px.body));
    });

    it('SIGNATURE: the emarsys labels', async () => {
        const form = await openForm('emarsys');
        assert.deepEqual(await fields(form), [
            ['username', 'ID', 'text'],
            ['password', 'Client Secret', 'password']
        ]);
        await form.locator('input[name="username"]').fill(fx.wsseUser);
        await form.locator('input[name="password"]').fill(fx.wsseSecret);
        const id = await submitAndWait(form);
        await mustBeNew('emarsys', id);
    });

    it('BILL: a refused login shows the server error and stores nothing, then connects', async () => {
        const form = await openForm('bill');
        assert.deepEqual(await fields(form), [
            ['username', 'Username', 'text'],
            ['password', 'Password', 'password'],
            ['organization_id', 'Organization ID', 'text'],
            ['dev_key', 'Developer key', 'password']
        ]);
        await form.locator('input[name="username"]').fill(fx.billUser);
        await form.locator('input[name="password"]').fill('wrong-password');
        await form.locator('input[name="organization_id"]').fill(fx.billOrg);
        await form.locator('input[name="dev_key"]').fill(fx.billDevKey);
        await form.locator('button[type="submit"]').click();
        const err = form.locator('.error');
        await err.waitFor({ state: 'visible', timeout: TIMEOUT });
        const shown = await err.textContent();
        // The server's words (the provider's refusal), not a generic text, and no secret.
        assert.match(shown, /refused the credentials/);
        assert.match(shown, /Invalid username or password/);
        assert.ok(!shown.includes('wrong-password') && !shown.includes(fx.billDevKey), shown);
        assert.equal((await connections('bill')).length, ids.bill.size, 'a refused login stored a connection');
        await form.locator('input[name="password"]').fill(fx.billPassword);
        const id = await submitAndWait(form);
        await mustBeNew('bill', id);
    });

    it('TBA: the token fields and the account id', async () => {
        const form = await openForm('netsuite-tba');
        assert.deepEqual(await fields(form), [
            ['accountId', 'Account ID', 'text'],
            ['token_id', 'Token ID', 'text'],
            ['token_secret', 'Token secret', 'password']
        ]);
        await form.locator('input[name="accountId"]').fill(fx.nsAccount);
        await form.locator('input[name="token_id"]').fill('tok-id');
        await form.locator('input[name="token_secret"]').fill('tok-secret');
        const id = await submitAndWait(form);
        await mustBeNew('netsuite-tba', id);
    });

    it('AWS_SIGV4: the role and the region', async () => {
        const form = await openForm('aws-sigv4');
        assert.deepEqual(await fields(form), [
            ['region', 'AWS Region (optional)', 'text'],
            ['role_arn', 'IAM Role ARN', 'text']
        ]);
        await form.locator('input[name="role_arn"]').fill('arn:aws:iam::123456789012:role/Partner');
        await form.locator('input[name="region"]').fill('us-west-2');
        const id = await submitAndWait(form);
        await mustBeNew('aws-sigv4', id);
        const c = await api('GET', `/connections/${id}?provider_config_key=aws-sigv4`);
        assert.equal(c.body.credentials.region, 'us-west-2');
        assert.equal(c.body.credentials.access_key_id, 'ASIATEMP1');
    });

    it('raised no page error', () => {
        assert.deepEqual(problems, []);
    });
});
