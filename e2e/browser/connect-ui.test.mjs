// Browser end-to-end tests: the pre-built connect UI (through connect_link and inside
// @nangohq/frontend's openConnectUI iframe) and @nangohq/frontend's auth(), in headless
// Chromium driven by playwright-core, against the reference server with a fake OAuth 2
// provider and a fake API-key check. e2e/browser_test.go (TestConnectUIBrowser) starts
// everything and sets:
//
//   NANGO_HOST, NANGO_API_KEY    the server and a full-access API key
//   E2E_PAGE_URL                 the test page that loads @nangohq/frontend (another origin)
//   E2E_CHROMIUM                 the Chromium executable (Debian's chromium)
//   E2E_SCREENSHOT_DIR           where the connect UI screenshots go
//   E2E_RESULTS                  the JSON file of the connections made, for the Go side to
//                                check against the connections API and the webhooks
//   E2E_API_KEY_VALUE, E2E_SUBDOMAIN, E2E_OWN_CLIENT_ID, E2E_OWN_CLIENT_SECRET
//                                what the fake provider accepts

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const env = (name) => {
    const v = process.env[name];
    if (!v) {
        throw new Error(`${name} must be set (see e2e/browser_test.go)`);
    }
    return v;
};
const host = env('NANGO_HOST').replace(/\/$/, '');
const apiKey = env('NANGO_API_KEY');
const pageURL = env('E2E_PAGE_URL');
const shots = env('E2E_SCREENSHOT_DIR');
const resultsFile = env('E2E_RESULTS');
const goodKey = env('E2E_API_KEY_VALUE');
const subdomain = env('E2E_SUBDOMAIN');
const ownClientID = env('E2E_OWN_CLIENT_ID');
const ownClientSecret = env('E2E_OWN_CLIENT_SECRET');

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
    assert.equal(res.status, 201, `POST /connect/sessions: ${JSON.stringify(json)}`);
    return json.data;
}

// newPage opens a page that fails the test on any uncaught error or CSP violation.
async function newPage(t, theme) {
    const context = await browser.newContext({ viewport: { width: 520, height: 720 }, colorScheme: theme ?? 'light' });
    const page = await context.newPage();
    const problems = [];
    const watch = (p) => {
        p.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
        p.on('console', (m) => {
            if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) {
                problems.push(`CSP: ${m.text()}`);
            }
        });
    };
    watch(page);
    context.on('page', watch);
    t.after(async () => {
        await context.close();
    });
    return { page, context, problems };
}

function user(name) {
    return `ui-${name}-${Date.now().toString(36)}`;
}

async function connectAPIKey(scope, page) {
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

describe('connect UI through connect_link', () => {
    it('lists the allowed integrations, rejects bad input clearly and connects an API key', async (t) => {
        const { page, problems } = await newPage(t);
        const endUser = user('apikey');
        const session = await createSession({
            tags: { end_user_id: endUser },
            allowed_integrations: ['e2e-apikey', 'e2e-oauth'],
            overrides: { 'e2e-apikey': { docs_connect: 'https://help.example.com/acme-analytics' } },
        });
        assert.ok(session.connect_link.startsWith(`${host}/connect/?session_token=`));
        await page.goto(session.connect_link);
        await page.locator('[data-screen="list"]').waitFor({ timeout: TIMEOUT });
        // The token leaves the address bar at once.
        assert.ok(!page.url().includes('session_token'), page.url());
        const listed = await page.locator('button.integration').evaluateAll((els) => els.map((e) => e.dataset.integration));
        assert.deepEqual(listed.sort(), ['e2e-apikey', 'e2e-oauth']);
        // Branding: the environment's light primary colour.
        const primary = await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--primary').trim());
        assert.equal(primary, '#6d28d9');
        assert.equal(await page.locator('#watermark').isVisible(), true);

        await page.locator('button[data-integration="e2e-apikey"]').click();
        const form = page.locator('form[data-integration="e2e-apikey"]');
        await form.waitFor({ timeout: TIMEOUT });
        // The docs link is the session's override, and a field's help link its section.
        assert.equal(await page.locator('.docs a').getAttribute('href'), 'https://help.example.com/acme-analytics');
        assert.equal(await form.locator('.field-docs').getAttribute('href'), 'https://help.example.com/acme-analytics#subdomain');
        // Required fields and the provider's pattern are checked before anything is sent.
        await form.locator('button[type="submit"]').click();
        assert.equal(await form.locator('.field-error:visible').count(), 2);
        await form.locator('input[name="subdomain"]').fill('Not A Subdomain!');
        await form.locator('input[name="apiKey"]').fill('wrong-key');
        await form.locator('button[type="submit"]').click();
        assert.match(await form.locator('.field-error:visible').first().textContent(), /format/);
        // A key the provider refuses: a clear error, nothing saved.
        await form.locator('input[name="subdomain"]').fill(subdomain);
        await form.locator('button[type="submit"]').click();
        const err = form.locator('.error');
        await err.waitFor({ state: 'visible', timeout: TIMEOUT });
        assert.match(await err.textContent(), /Acme Analytics did not accept these credentials/);
        // The right key connects.
        await form.locator('input[name="apiKey"]').fill(goodKey);
        await form.locator('button[type="submit"]').click();
        const ok = page.locator('[data-screen="success"] .success');
        await ok.waitFor({ timeout: TIMEOUT });
        const connectionId = await ok.getAttribute('data-connection-id');
        assert.ok(connectionId);
        results.push({ via: 'connect_link', integration: 'e2e-apikey', authMode: 'API_KEY', connectionId, endUserId: endUser });
        assert.deepEqual(problems, []);

        // A reconnect session opens that integration at once and keeps the connection id.
        const res = await fetch(`${host}/connect/sessions/reconnect`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({ connection_id: connectionId, integration_id: 'e2e-apikey', tags: { end_user_id: endUser } }),
        });
        const reconnect = await res.json();
        assert.equal(res.status, 201, JSON.stringify(reconnect));
        await page.goto(reconnect.data.connect_link);
        const again = page.locator('form[data-integration="e2e-apikey"]');
        await again.waitFor({ timeout: TIMEOUT });
        assert.equal(await page.locator('h1').textContent(), 'Reconnect Acme Analytics');
        assert.equal(await page.locator('#back').isVisible(), false);
        await again.locator('input[name="subdomain"]').fill(subdomain);
        await again.locator('input[name="apiKey"]').fill(goodKey);
        await again.locator('button[type="submit"]').click();
        await ok.waitFor({ timeout: TIMEOUT });
        assert.equal(await ok.getAttribute('data-connection-id'), connectionId);
        results.push({ via: 'connect_link_reconnect', integration: 'e2e-apikey', authMode: 'API_KEY', connectionId, endUserId: endUser, operation: 'override' });
        assert.deepEqual(problems, []);
    });

    it('connects an OAuth 2 integration in a popup', async (t) => {
        const { page, context, problems } = await newPage(t);
        // No status poll here: the outcome must come from the callback page's message.
        await context.route('**/oauth/status/**', (route) =>
            route.fulfill({ status: 404, contentType: 'application/json', body: '{"error":{"code":"not_found"}}' })
        );
        const endUser = user('oauth');
        const session = await createSession({ tags: { end_user_id: endUser }, allowed_integrations: ['e2e-oauth', 'e2e-apikey'] });
        await page.goto(session.connect_link);
        await page.locator('button[data-integration="e2e-oauth"]').click();
        const form = page.locator('form[data-integration="e2e-oauth"]');
        await form.waitFor({ timeout: TIMEOUT });
        const [popup] = await Promise.all([page.waitForEvent('popup', { timeout: TIMEOUT }), form.locator('button[type="submit"]').click()]);
        assert.ok(popup);
        const ok = page.locator('[data-screen="success"] .success');
        await ok.waitFor({ timeout: TIMEOUT });
        const connectionId = await ok.getAttribute('data-connection-id');
        assert.ok(connectionId);
        results.push({ via: 'connect_link', integration: 'e2e-oauth', authMode: 'OAUTH2', connectionId, endUserId: endUser });
        // The callback page closes itself once the UI has acknowledged it.
        if (!popup.isClosed()) {
            await popup.waitForEvent('close', { timeout: TIMEOUT });
        }
        assert.deepEqual(problems, []);
    });

    it("asks for the end user's own OAuth app when the session leaves it empty", async (t) => {
        const { page, problems } = await newPage(t);
        const endUser = user('ownapp');
        const session = await createSession({
            tags: { end_user_id: endUser },
            allowed_integrations: ['e2e-oauth'],
            integrations_config_defaults: { 'e2e-oauth': { connection_config: { oauth_client_id_override: '', oauth_client_secret_override: '' } } },
        });
        await page.goto(session.connect_link);
        // One integration: its form opens at once.
        const form = page.locator('form[data-integration="e2e-oauth"]');
        await form.waitFor({ timeout: TIMEOUT });
        await form.locator('input[name="oauth_client_id_override"]').fill(ownClientID);
        await form.locator('input[name="oauth_client_secret_override"]').fill(ownClientSecret);
        await Promise.all([page.waitForEvent('popup', { timeout: TIMEOUT }), form.locator('button[type="submit"]').click()]);
        const ok = page.locator('[data-screen="success"] .success');
        await ok.waitFor({ timeout: TIMEOUT });
        const connectionId = await ok.getAttribute('data-connection-id');
        results.push({ via: 'connect_link_own_app', integration: 'e2e-oauth', authMode: 'OAUTH2', connectionId, endUserId: endUser });
        assert.deepEqual(problems, []);
    });

    it('completes through the status poll when the popup cannot talk back', async (t) => {
        const { page, context, problems } = await newPage(t);
        const endUser = user('poll');
        const session = await createSession({ tags: { end_user_id: endUser }, allowed_integrations: ['e2e-oauth'] });
        // The callback still runs on the server, but its page neither posts nor closes.
        await context.route('**/oauth/callback?**', async (route) => {
            const response = await route.fetch();
            await route.fulfill({ response, body: '<!doctype html><p>Done.</p>', headers: { 'content-type': 'text/html' } });
        });
        await page.goto(session.connect_link);
        const form = page.locator('form[data-integration="e2e-oauth"]');
        await form.waitFor({ timeout: TIMEOUT });
        const [popup] = await Promise.all([page.waitForEvent('popup', { timeout: TIMEOUT }), form.locator('button[type="submit"]').click()]);
        const ok = page.locator('[data-screen="success"] .success');
        await ok.waitFor({ timeout: TIMEOUT });
        const connectionId = await ok.getAttribute('data-connection-id');
        assert.ok(connectionId);
        results.push({ via: 'connect_link_poll', integration: 'e2e-oauth', authMode: 'OAUTH2', connectionId, endUserId: endUser });
        // The UI closes the silent popup itself.
        if (!popup.isClosed()) {
            await popup.waitForEvent('close', { timeout: TIMEOUT });
        }
        assert.deepEqual(problems, []);
    });

    it("shows the provider's refusal and writes nothing", async (t) => {
        const { page, problems } = await newPage(t);
        const endUser = user('denied');
        const session = await createSession({
            tags: { end_user_id: endUser },
            allowed_integrations: ['e2e-oauth'],
            integrations_config_defaults: { 'e2e-oauth': { authorization_params: { e2e_deny: '1' } } },
        });
        await page.goto(session.connect_link);
        const form = page.locator('form[data-integration="e2e-oauth"]');
        await form.waitFor({ timeout: TIMEOUT });
        await Promise.all([page.waitForEvent('popup', { timeout: TIMEOUT }), form.locator('button[type="submit"]').click()]);
        const err = form.locator('.error');
        await err.waitFor({ state: 'visible', timeout: TIMEOUT });
        assert.match(await err.textContent(), /access_denied|denied/i);
        // The form is usable again, and no connection was written.
        assert.equal(await form.locator('button[type="submit"]').isEnabled(), true);
        const res = await fetch(`${host}/connections?tags%5Bend_user_id%5D=${encodeURIComponent(endUser)}`, { headers: { Authorization: `Bearer ${apiKey}` } });
        const body = await res.json();
        assert.equal(res.status, 200, JSON.stringify(body));
        assert.deepEqual(body.connections, []);
        assert.deepEqual(problems, []);
    });

    it('follows the branding of the session: default theme, colours, no "secured by"', async (t) => {
        const { page, context, problems } = await newPage(t, 'light');
        const session = await createSession({ tags: { end_user_id: user('brand') }, allowed_integrations: ['e2e-apikey', 'e2e-oauth'] });
        // The server's answer, with other branding (as another environment would have).
        await context.route('**/connect/session', async (route) => {
            const response = await route.fetch();
            const body = await response.json();
            body.data.connectUISettings = { theme: { light: { primary: '#0a7d33' }, dark: { primary: '#ffcc00' } }, defaultTheme: 'dark', showWatermark: false };
            await route.fulfill({ response, json: body });
        });
        await page.goto(session.connect_link);
        await page.locator('[data-screen="list"]').waitFor({ timeout: TIMEOUT });
        assert.equal(await page.locator('html').getAttribute('data-theme'), 'dark');
        const css = await page.evaluate(() => {
            const s = getComputedStyle(document.documentElement);
            return [s.getPropertyValue('--primary').trim(), s.getPropertyValue('--on-primary').trim()];
        });
        assert.deepEqual(css, ['#ffcc00', '#111418']); // dark text on a light colour
        assert.equal(await page.locator('#watermark').isVisible(), false);
        assert.deepEqual(problems, []);
    });

    it('says clearly when the link has expired', async (t) => {
        const { page, problems } = await newPage(t);
        await page.goto(`${host}/connect/?session_token=nango_connect_session_${'0'.repeat(64)}`);
        const fatal = page.locator('[data-screen="fatal"] [role="alert"]');
        await fatal.waitFor({ timeout: TIMEOUT });
        assert.match(await fatal.textContent(), /expired/);
        assert.deepEqual(problems, []);
    });
});

describe('connect UI inside openConnectUI', () => {
    it('receives the token by message, connects, and posts only non-secret events', async (t) => {
        const { page, problems } = await newPage(t);
        const endUser = user('iframe');
        const session = await createSession({ tags: { end_user_id: endUser }, allowed_integrations: ['e2e-apikey', 'e2e-oauth'] });
        await page.goto(pageURL);
        await page.waitForFunction(() => window.frontendLoaded === true, null, { timeout: TIMEOUT });
        await page.evaluate(
            ({ host, token }) => {
                window.events = [];
                const nango = new window.Nango({ host, connectSessionToken: token });
                window.connectUI = nango.openConnectUI({
                    baseURL: `${host}/connect/`,
                    apiURL: host,
                    themeOverride: 'dark',
                    lang: 'fr',
                    onEvent: (e) => window.events.push(e),
                });
            },
            { host, token: session.token }
        );
        const frame = page.frameLocator('#connect-ui');
        await frame.locator('[data-screen="list"]').waitFor({ timeout: TIMEOUT });
        // The iframe's URL carries no token.
        const src = await page.locator('#connect-ui').getAttribute('src');
        assert.ok(!src.includes(session.token));
        assert.ok(src.includes('theme=dark'));
        assert.equal(await frame.locator('html').getAttribute('data-theme'), 'dark');
        assert.equal(await frame.locator('h1').textContent(), 'Choisissez le compte à connecter');
        const connectionId = await connectAPIKey(frame, page);
        assert.ok(connectionId);
        results.push({ via: 'openConnectUI', integration: 'e2e-apikey', authMode: 'API_KEY', connectionId, endUserId: endUser });
        // Then an OAuth integration, whose popup the iframe opens.
        await frame.locator('button.link').click();
        await frame.locator('button[data-integration="e2e-oauth"]').click();
        const oauthForm = frame.locator('form[data-integration="e2e-oauth"]');
        await oauthForm.waitFor({ timeout: TIMEOUT });
        await Promise.all([page.waitForEvent('popup', { timeout: TIMEOUT }), oauthForm.locator('button[type="submit"]').click()]);
        const ok = frame.locator('[data-screen="success"] .success');
        await ok.waitFor({ timeout: TIMEOUT });
        const oauthConnectionId = await ok.getAttribute('data-connection-id');
        assert.ok(oauthConnectionId && oauthConnectionId !== connectionId);
        results.push({ via: 'openConnectUI', integration: 'e2e-oauth', authMode: 'OAUTH2', connectionId: oauthConnectionId, endUserId: endUser });
        await frame.locator('#done').click();
        await page.locator('#connect-ui').waitFor({ state: 'detached', timeout: TIMEOUT });

        const events = await page.evaluate(() => window.events);
        const types = events.map((e) => e.type);
        assert.equal(types[0], 'ready');
        assert.ok(types.includes('settings_changed'), types.join());
        assert.equal(types.at(-1), 'close');
        const connects = events.filter((e) => e.type === 'connect').map((e) => e.payload);
        assert.deepEqual(connects, [
            { providerConfigKey: 'e2e-apikey', connectionId, isPending: false },
            { providerConfigKey: 'e2e-oauth', connectionId: oauthConnectionId, isPending: false },
        ]);
        const settings = events.find((e) => e.type === 'settings_changed');
        assert.equal(settings.payload.theme.dark.primary, '#a78bfa');
        const all = JSON.stringify(events);
        assert.ok(!all.includes(session.token), 'an event carries the session token');
        assert.ok(!all.includes(goodKey), 'an event carries the API key');
        assert.deepEqual(problems, []);
    });
});

describe('connect UI inside openConnectUI with detectClosedAuthWindow', () => {
    it('reports a popup closed before the end', async (t) => {
        const { page, context, problems } = await newPage(t);
        const session = await createSession({ tags: { end_user_id: user('closed') }, allowed_integrations: ['e2e-oauth'] });
        // The popup stays on a page of ours: the end user closes it.
        await context.route('**/oauth/connect/**', (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<p>Sign in…</p>' }));
        await page.goto(pageURL);
        await page.waitForFunction(() => window.frontendLoaded === true, null, { timeout: TIMEOUT });
        await page.evaluate(
            ({ host, token }) => {
                window.events = [];
                new window.Nango({ host, connectSessionToken: token }).openConnectUI({
                    baseURL: `${host}/connect/`,
                    apiURL: host,
                    detectClosedAuthWindow: true,
                    onEvent: (e) => window.events.push(e),
                });
            },
            { host, token: session.token }
        );
        const frame = page.frameLocator('#connect-ui');
        const form = frame.locator('form[data-integration="e2e-oauth"]');
        await form.waitFor({ timeout: TIMEOUT });
        const [popup] = await Promise.all([page.waitForEvent('popup', { timeout: TIMEOUT }), form.locator('button[type="submit"]').click()]);
        await popup.waitForLoadState();
        await popup.close();
        const err = form.locator('.error');
        await err.waitFor({ state: 'visible', timeout: TIMEOUT });
        assert.match(await err.textContent(), /closed/);
        await page.waitForFunction(() => window.events.some((e) => e.type === 'error'), null, { timeout: TIMEOUT });
        const error = await page.evaluate(() => window.events.find((e) => e.type === 'error'));
        assert.equal(error.payload.errorType, 'window_closed');
        assert.deepEqual(problems, []);
    });
});

describe('@nangohq/frontend auth() with a session token', () => {
    async function frontendPage(t) {
        const p = await newPage(t);
        await p.page.goto(pageURL);
        await p.page.waitForFunction(() => window.frontendLoaded === true, null, { timeout: TIMEOUT });
        return p;
    }

    it('connects an API-key integration', async (t) => {
        const { page, problems } = await frontendPage(t);
        const endUser = user('auth-apikey');
        const session = await createSession({ tags: { end_user_id: endUser }, allowed_integrations: ['e2e-apikey'] });
        const res = await page.evaluate(
            ({ host, token, key, subdomain }) =>
                new window.Nango({ host, connectSessionToken: token }).auth('e2e-apikey', { credentials: { apiKey: key }, params: { subdomain } }),
            { host, token: session.token, key: goodKey, subdomain }
        );
        assert.equal(res.providerConfigKey, 'e2e-apikey');
        assert.ok(res.connectionId);
        results.push({ via: 'frontend.auth', integration: 'e2e-apikey', authMode: 'API_KEY', connectionId: res.connectionId, endUserId: endUser });
        // A wrong key is an AuthError with the server's code.
        const err = await page.evaluate(
            ({ host, token, subdomain }) =>
                new window.Nango({ host, connectSessionToken: token })
                    .auth('e2e-apikey', { credentials: { apiKey: 'wrong' }, params: { subdomain } })
                    .then(
                        () => null,
                        (e) => ({ type: e.type, message: e.message, isAuthError: e instanceof window.AuthError })
                    ),
            { host, token: session.token, subdomain }
        );
        assert.equal(err?.type, 'connection_validation_failed');
        assert.equal(err.isAuthError, true);
        assert.deepEqual(problems, []);
    });

    it('connects an OAuth 2 integration through the popup and the WebSocket', async (t) => {
        const { page, problems } = await frontendPage(t);
        const endUser = user('auth-oauth');
        const session = await createSession({ tags: { end_user_id: endUser }, allowed_integrations: ['e2e-oauth'] });
        const res = await page.evaluate(
            ({ host, token }) => new window.Nango({ host, connectSessionToken: token }).auth('e2e-oauth'),
            { host, token: session.token }
        );
        assert.equal(res.providerConfigKey, 'e2e-oauth');
        assert.ok(res.connectionId);
        assert.equal(res.isPending, false);
        results.push({ via: 'frontend.auth', integration: 'e2e-oauth', authMode: 'OAUTH2', connectionId: res.connectionId, endUserId: endUser });
        assert.deepEqual(problems, []);
    });
});

describe('screenshots', () => {
    for (const theme of ['light', 'dark']) {
        it(`of the connect UI in the ${theme} theme`, async (t) => {
            const { page, problems } = await newPage(t, theme);
            const session = await createSession({ tags: { end_user_id: user('shot') }, allowed_integrations: ['e2e-oauth', 'e2e-apikey', 'github'] });
            await page.goto(`${session.connect_link}&theme=${theme}`);
            await page.locator('[data-screen="list"]').waitFor({ timeout: TIMEOUT });
            assert.equal(await page.locator('html').getAttribute('data-theme'), theme);
            // Without ?theme=, the environment's default (system) follows the browser.
            const other = theme === 'light' ? 'dark' : 'light';
            const { page: sys } = await newPage(t, other);
            await sys.goto(`${host}/connect/?session_token=${session.token}`);
            await sys.locator('[data-screen="list"]').waitFor({ timeout: TIMEOUT });
            assert.equal(await sys.locator('html').getAttribute('data-theme'), other);
            // Logos loaded (or replaced by their monogram) before the picture.
            await page.waitForFunction(() => [...document.images].every((i) => i.complete));
            await page.screenshot({ path: join(shots, `connect-ui-${theme}.png`) });
            await page.locator('button[data-integration="e2e-apikey"]').click();
            await page.locator('form[data-integration="e2e-apikey"]').waitFor({ timeout: TIMEOUT });
            await page.locator('input[name="subdomain"]').fill('mycompany');
            await page.locator('input[name="apiKey"]').focus();
            await page.waitForFunction(() => [...document.images].every((i) => i.complete));
            await page.screenshot({ path: join(shots, `connect-ui-form-${theme}.png`) });
            assert.deepEqual(problems, []);
        });
    }
});
