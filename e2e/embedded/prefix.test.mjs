// Browser end-to-end tests of the service embedded under a path prefix of a host application
// (e2e/embedded_test.go, TestEmbeddedUnderPrefix, starts everything): the connect UI through
// connect_link and inside openConnectUI's iframe, and @nangohq/frontend's auth() with its
// popup and WebSocket, in headless Chromium driven by playwright-core. It reads:
//
//   NANGO_HOST, NANGO_API_KEY    the service's public URL (prefix included) and an API key
//   E2E_PREFIX                   the prefix, such as /connect
//   E2E_PAGE_URL                 the host application's page that loads @nangohq/frontend
//                                (same origin as the service)
//   E2E_CHROMIUM                 the Chromium executable
//   E2E_RESULTS                  the JSON file of the connections made, for the Go side
//   E2E_API_KEY_VALUE, E2E_SUBDOMAIN
//                                what the fake provider accepts

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const env = (name) => {
    const v = process.env[name];
    if (!v) {
        throw new Error(`${name} must be set (see e2e/embedded_test.go)`);
    }
    return v;
};
const host = env('NANGO_HOST').replace(/\/$/, '');
const apiKey = env('NANGO_API_KEY');
const prefix = env('E2E_PREFIX');
const pageURL = env('E2E_PAGE_URL');
const resultsFile = env('E2E_RESULTS');
const goodKey = env('E2E_API_KEY_VALUE');
const subdomain = env('E2E_SUBDOMAIN');

const TIMEOUT = 20_000;
const results = [];
let browser;

before(async () => {
    const args = ['--disable-dev-shm-usage'];
    if (process.getuid?.() === 0) {
        args.push('--no-sandbox');
    }
    browser = await chromium.launch({ executablePath: env('E2E_CHROMIUM'), headless: true, args });
});

after(async () => {
    writeFileSync(resultsFile, JSON.stringify(results, null, 2));
    await browser?.close();
});

async function createSession(body) {
    const res = await fetch(`${host}/connect/sessions`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
    });
    const json = await res.json();
    assert.equal(res.status, 201, `POST ${host}/connect/sessions: ${JSON.stringify(json)}`);
    return json.data;
}

// newPage opens a page in a fresh context and records every problem of it and of the popups
// and frames it opens: uncaught errors, CSP violations, failed WebSockets, requests that
// failed, and answers of 400 or more from the service.
async function newPage(t) {
    const context = await browser.newContext({ viewport: { width: 520, height: 720 } });
    const page = await context.newPage();
    const problems = [];
    const watch = (p) => {
        p.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
        p.on('console', (m) => {
            if (m.type() === 'error' && /Content Security Policy|Refused to|WebSocket/i.test(m.text())) {
                problems.push(`console: ${m.text()}`);
            }
        });
    };
    watch(page);
    context.on('page', watch);
    context.on('response', (r) => {
        if (r.status() >= 400 && r.url().startsWith(host)) {
            problems.push(`${r.request().method()} ${r.url()}: ${r.status()}`);
        }
    });
    context.on('requestfailed', (r) => {
        if (r.url().startsWith(host)) {
            problems.push(`${r.method()} ${r.url()} failed: ${r.failure()?.errorText}`);
        }
    });
    t.after(async () => {
        await context.close();
    });
    return { page, context, problems };
}

function user(name) {
    return `prefix-${name}-${Date.now().toString(36)}`;
}

async function imagesLoaded(scope) {
    // Logos the service serves (monograms here) load from under the prefix.
    const logos = scope.locator('img.logo');
    const n = await logos.count();
    for (let i = 0; i < n; i++) {
        await logos.nth(i).evaluate((img) =>
            img.complete ? null : new Promise((resolve) => img.addEventListener('load', resolve, { once: true }))
        );
        assert.ok((await logos.nth(i).evaluate((img) => img.naturalWidth)) > 0, `logo ${await logos.nth(i).getAttribute('src')} did not load`);
        assert.ok((await logos.nth(i).getAttribute('src')).startsWith(`${host}/`), 'a logo outside the prefix');
    }
}

async function connectAPIKey(scope) {
    await scope.locator('button[data-integration="e2e-apikey"]').click();
    const form = scope.locator('form[data-integration="e2e-apikey"]');
    await form.waitFor({ timeout: TIMEOUT });
    await form.locator('input[name="subdomain"]').fill(subdomain);
    await form.locator('input[name="apiKey"]').fill(goodKey);
    await form.locator('button[type="submit"]').click();
    const ok = scope.locator('[data-screen="success"] .success');
    await ok.waitFor({ timeout: TIMEOUT });
    return ok.getAttribute('data-connection-id');
}

describe(`the service under ${prefix}`, () => {
    it('connect_link opens the connect UI under the prefix, which connects an API key and an OAuth 2 account', async (t) => {
        const { page, problems } = await newPage(t);
        const endUser = user('link');
        const session = await createSession({ tags: { end_user_id: endUser }, allowed_integrations: ['e2e-apikey', 'e2e-oauth'] });
        assert.ok(session.connect_link.startsWith(`${host}/connect/?session_token=`), session.connect_link);
        await page.goto(session.connect_link);
        await page.locator('[data-screen="list"]').waitFor({ timeout: TIMEOUT });
        await imagesLoaded(page);
        const apiKeyConnection = await connectAPIKey(page);
        assert.ok(apiKeyConnection);
        results.push({ via: 'connect_link', integration: 'e2e-apikey', authMode: 'API_KEY', connectionId: apiKeyConnection });

        // Back to the list, then OAuth 2 in a popup on /oauth/connect under the prefix.
        await page.locator('button.link').click();
        await page.locator('button[data-integration="e2e-oauth"]').click();
        const form = page.locator('form[data-integration="e2e-oauth"]');
        await form.waitFor({ timeout: TIMEOUT });
        const [popup] = await Promise.all([page.waitForEvent('popup', { timeout: TIMEOUT }), form.locator('button[type="submit"]').click()]);
        const ok = page.locator('[data-screen="success"] .success');
        await ok.waitFor({ timeout: TIMEOUT });
        const oauthConnection = await ok.getAttribute('data-connection-id');
        assert.ok(oauthConnection && oauthConnection !== apiKeyConnection);
        results.push({ via: 'connect_link', integration: 'e2e-oauth', authMode: 'OAUTH2', connectionId: oauthConnection });
        if (!popup.isClosed()) {
            await popup.waitForEvent('close', { timeout: TIMEOUT });
        }
        assert.deepEqual(problems, []);
    });

    it('openConnectUI shows the connect UI from under the prefix in its iframe', async (t) => {
        const { page, problems } = await newPage(t);
        const endUser = user('iframe');
        const session = await createSession({ tags: { end_user_id: endUser }, allowed_integrations: ['e2e-apikey', 'e2e-oauth'] });
        await page.goto(pageURL);
        await page.waitForFunction(() => window.frontendLoaded === true, null, { timeout: TIMEOUT });
        await page.evaluate(
            ({ host, token }) => {
                window.events = [];
                new window.Nango({ host, connectSessionToken: token }).openConnectUI({
                    baseURL: `${host}/connect/`,
                    apiURL: host,
                    onEvent: (e) => window.events.push(e),
                });
            },
            { host, token: session.token }
        );
        const frame = page.frameLocator('#connect-ui');
        await frame.locator('[data-screen="list"]').waitFor({ timeout: TIMEOUT });
        await imagesLoaded(frame);
        const connectionId = await connectAPIKey(frame);
        assert.ok(connectionId);
        results.push({ via: 'openConnectUI', integration: 'e2e-apikey', authMode: 'API_KEY', connectionId });
        await page.waitForFunction(() => window.events.some((e) => e.type === 'connect'), null, { timeout: TIMEOUT });
        assert.deepEqual(problems, []);
    });

    it("auth() connects through the popup and the WebSocket at the websocketsPath the session announces", async (t) => {
        const { page, problems } = await newPage(t);
        const endUser = user('auth');
        const session = await createSession({ tags: { end_user_id: endUser }, allowed_integrations: ['e2e-oauth', 'e2e-apikey'] });
        // What the connect UI reads: the path to give the frontend as websocketsPath.
        const res = await fetch(`${host}/connect/session`, { headers: { Authorization: `Bearer ${session.token}` } });
        const { data } = await res.json();
        assert.equal(res.status, 200);
        assert.equal(data.websocketsPath, `${prefix}/`);
        await page.goto(pageURL);
        await page.waitForFunction(() => window.frontendLoaded === true, null, { timeout: TIMEOUT });
        const sockets = [];
        page.on('websocket', (ws) => sockets.push(ws.url()));
        const oauth = await page.evaluate(
            ({ host, websocketsPath, token }) => new window.Nango({ host, websocketsPath, connectSessionToken: token }).auth('e2e-oauth'),
            { host, websocketsPath: data.websocketsPath, token: session.token }
        );
        assert.equal(oauth.providerConfigKey, 'e2e-oauth');
        assert.equal(oauth.isPending, false);
        assert.ok(oauth.connectionId);
        assert.deepEqual(sockets, [`${host.replace(/^http/, 'ws')}/`]);
        results.push({ via: 'frontend.auth', integration: 'e2e-oauth', authMode: 'OAUTH2', connectionId: oauth.connectionId });

        const key = await page.evaluate(
            ({ host, websocketsPath, token, key, subdomain }) =>
                new window.Nango({ host, websocketsPath, connectSessionToken: token }).auth('e2e-apikey', {
                    credentials: { apiKey: key },
                    params: { subdomain },
                }),
            { host, websocketsPath: data.websocketsPath, token: session.token, key: goodKey, subdomain }
        );
        assert.equal(key.providerConfigKey, 'e2e-apikey');
        results.push({ via: 'frontend.auth', integration: 'e2e-apikey', authMode: 'API_KEY', connectionId: key.connectionId });
        assert.deepEqual(problems, []);
    });
});
