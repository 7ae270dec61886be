// Browser end-to-end test of the popup auth modes: @nangohq/frontend's nango.auth(key) in
// headless Chromium connects an MCP_OAUTH2 integration (dynamic client registration), an
// MCP_OAUTH2_GENERIC one (the end user's MCP server URL, discovered) and a CUSTOM one
// (GitHub App installation plus user authorization), each through the popup and the
// WebSocket; then the pre-built connect UI, opened from a connect_link, connects those
// three and an INSTALL_PLUGIN one (a Crisp plugin) through its popup.
// e2e/authmodes_popup_test.go (TestPopupAuthModesBrowser) starts everything, then proxies
// and refreshes through the connections written to E2E_POPUP_RESULTS (the connect UI's
// under "ui/" + integration). Run without that variable (as TestConnectUIBrowser runs
// every browser file), it skips.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const resultsFile = process.env.E2E_POPUP_RESULTS;
const TIMEOUT = 20_000;

describe('popup auth modes through nango.auth', { skip: !resultsFile && 'run by TestPopupAuthModesBrowser' }, () => {
    const host = (process.env.NANGO_HOST ?? '').replace(/\/$/, '');
    const apiKey = process.env.NANGO_API_KEY;
    const pageURL = process.env.E2E_PAGE_URL;
    const mcpServerURL = process.env.E2E_MCP_SERVER_URL;
    const results = {};
    let browser;

    before(async () => {
        const args = ['--disable-dev-shm-usage'];
        if (process.getuid?.() === 0) {
            args.push('--no-sandbox');
        }
        browser = await chromium.launch({ executablePath: process.env.E2E_CHROMIUM, headless: true, args });
    });

    after(async () => {
        writeFileSync(resultsFile, JSON.stringify(results, null, 2));
        await browser?.close();
    });

    async function session(key) {
        const res = await fetch(`${host}/connect/sessions`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({ tags: { end_user_id: `popup-${key}` }, allowed_integrations: [key] }),
        });
        const json = await res.json();
        assert.equal(res.status, 201, JSON.stringify(json));
        return json.data.token;
    }

    async function connect(t, key, options) {
        const context = await browser.newContext();
        t.after(() => context.close());
        const page = await context.newPage();
        const problems = [];
        page.on('pageerror', (e) => problems.push(e.message));
        await page.goto(pageURL);
        await page.waitForFunction(() => window.frontendLoaded === true, null, { timeout: TIMEOUT });
        const token = await session(key);
        const res = await page.evaluate(
            ({ host, token, key, options }) =>
                new window.Nango({ host, connectSessionToken: token }).auth(key, options).then(
                    (r) => r,
                    (e) => ({ error: e.type, message: e.message })
                ),
            { host, token, key, options }
        );
        assert.equal(res.error, undefined, `${key}: ${JSON.stringify(res)}`);
        assert.equal(res.providerConfigKey, key);
        assert.ok(res.connectionId);
        assert.deepEqual(problems, []);
        results[key] = res.connectionId;
        return res;
    }

    it('connects an MCP_OAUTH2 integration with a dynamically registered client', async (t) => {
        await connect(t, 'airtable-mcp');
    });

    it('connects an MCP_OAUTH2_GENERIC integration to the end user\'s MCP server', async (t) => {
        await connect(t, 'mcp-generic', { params: { mcp_server_url: mcpServerURL } });
    });

    it('installs a GitHub App and authorizes the user in one popup (CUSTOM)', async (t) => {
        await connect(t, 'github-app-oauth');
    });

    it('reports a failed discovery as an AuthError', async (t) => {
        const context = await browser.newContext();
        t.after(() => context.close());
        const page = await context.newPage();
        await page.goto(pageURL);
        await page.waitForFunction(() => window.frontendLoaded === true, null, { timeout: TIMEOUT });
        const token = await session('mcp-generic');
        const err = await page.evaluate(
            ({ host, token, url }) =>
                new window.Nango({ host, connectSessionToken: token })
                    .auth('mcp-generic', { params: { mcp_server_url: url } })
                    .then(
                        () => null,
                        (e) => ({ type: e.type, isAuthError: e instanceof window.AuthError })
                    ),
            { host, token, url: new URL('/nothing-here', mcpServerURL).toString() }
        );
        assert.equal(err?.type, 'mcp_discovery_failed');
        assert.equal(err.isAuthError, true);
    });
});

describe('popup auth modes through the connect UI', { skip: !resultsFile && 'run by TestPopupAuthModesBrowser' }, () => {
    const host = (process.env.NANGO_HOST ?? '').replace(/\/$/, '');
    const apiKey = process.env.NANGO_API_KEY;
    const mcpServerURL = process.env.E2E_MCP_SERVER_URL;
    const results = {};
    let browser;

    before(async () => {
        const args = ['--disable-dev-shm-usage'];
        if (process.getuid?.() === 0) {
            args.push('--no-sandbox');
        }
        browser = await chromium.launch({ executablePath: process.env.E2E_CHROMIUM, headless: true, args });
    });

    after(async () => {
        // The nango.auth suite above wrote its connections first: add the connect UI's.
        let all = {};
        try {
            all = JSON.parse(readFileSync(resultsFile, 'utf8'));
        } catch {
            // the suite above wrote nothing: the Go test reports what is missing
        }
        writeFileSync(resultsFile, JSON.stringify({ ...all, ...results }, null, 2));
        await browser?.close();
    });

    // openForm opens a connect_link for one integration in a new page and
    // returns the page and the integration's form. With ownApp the session
    // asks the end user for their own OAuth app (empty
    // oauth_client_id_override and oauth_client_secret_override).
    async function openForm(t, key, { ownApp = false } = {}) {
        const context = await browser.newContext({ viewport: { width: 520, height: 900 } });
        t.after(() => context.close());
        const page = await context.newPage();
        const problems = [];
        page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
        page.on('console', (m) => {
            if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) {
                problems.push(`CSP: ${m.text()}`);
            }
        });
        const res = await fetch(`${host}/connect/sessions`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({
                tags: { end_user_id: `ui-popup-${key}` },
                allowed_integrations: [key],
                ...(ownApp && {
                    integrations_config_defaults: {
                        [key]: { connection_config: { oauth_client_id_override: '', oauth_client_secret_override: '' } },
                    },
                }),
            }),
        });
        const json = await res.json();
        assert.equal(res.status, 201, JSON.stringify(json));
        await page.goto(json.data.connect_link);
        const form = page.locator(`form[data-integration="${key}"]`);
        await form.waitFor({ timeout: TIMEOUT });
        return { page, form, problems };
    }

    // fields lists the form's inputs as [name, label, type] in order.
    async function fields(form) {
        return form.locator('.field').evaluateAll((els) =>
            els.map((el) => {
                const input = el.querySelector('input');
                return [input.name, el.querySelector('label').firstChild.textContent, input.type];
            })
        );
    }

    // connectInPopup submits the form, which opens the popup, and waits for
    // the success screen; it returns the connection id the UI shows.
    async function connectInPopup(page, form, key) {
        const [popup] = await Promise.all([page.waitForEvent('popup', { timeout: TIMEOUT }), form.locator('button[type="submit"]').click()]);
        assert.ok(popup);
        const ok = page.locator('[data-screen="success"] .success');
        const err = form.locator('.error:visible');
        await Promise.race([ok.waitFor({ timeout: TIMEOUT }), err.waitFor({ timeout: TIMEOUT })]);
        if (await err.count()) {
            assert.fail(`${key}: the form shows an error: ${await err.textContent()}`);
        }
        const id = await ok.getAttribute('data-connection-id');
        assert.ok(id, `${key}: the success screen shows no connection`);
        // The callback page closes itself once the UI has acknowledged it (or the UI closes it).
        if (!popup.isClosed()) {
            await popup.waitForEvent('close', { timeout: TIMEOUT });
        }
        const c = await fetch(`${host}/connections/${encodeURIComponent(id)}?provider_config_key=${key}`, {
            headers: { Authorization: `Bearer ${apiKey}` },
        });
        assert.equal(c.status, 200, `${key}: GET the connection ${id}: ${await c.text()}`);
        results[`ui/${key}`] = id;
        return id;
    }

    it('MCP_OAUTH2: no field to fill, a dynamically registered client (no own OAuth app asked for)', async (t) => {
        // The session offers an own OAuth app, which a client registered
        // for each flow cannot use: the form does not ask for one.
        const { page, form, problems } = await openForm(t, 'airtable-mcp', { ownApp: true });
        assert.deepEqual(await fields(form), []);
        assert.equal(await form.locator('p.muted').first().textContent(), 'You will sign in to Airtable (MCP) and allow access.');
        await connectInPopup(page, form, 'airtable-mcp');
        assert.deepEqual(problems, []);
    });

    it("MCP_OAUTH2_GENERIC: the provider's mcp_server_url field, checked against its pattern", async (t) => {
        const { page, form, problems } = await openForm(t, 'mcp-generic');
        assert.deepEqual(await fields(form), [['mcp_server_url', 'MCP Server URL', 'text']]);
        const input = form.locator('input[name="mcp_server_url"]');
        assert.equal(await input.getAttribute('placeholder'), 'https://mcp.notion.com/mcp');
        assert.equal(await form.locator('.help').first().textContent(), 'The base URL of your MCP server');
        // A value off the schema's pattern is refused in the form: no popup.
        let opened = false;
        page.on('popup', () => {
            opened = true;
        });
        await input.fill('ftp://mcp.example.com');
        await form.locator('button[type="submit"]').click();
        const fieldError = form.locator('.field-error:visible');
        await fieldError.waitFor({ timeout: TIMEOUT });
        assert.equal(await input.getAttribute('aria-invalid'), 'true');
        assert.equal(opened, false, 'a value off the pattern opened the popup');
        await input.fill(mcpServerURL);
        await connectInPopup(page, form, 'mcp-generic');
        assert.deepEqual(problems, []);
    });

    it('CUSTOM: the GitHub App install and the user authorization, its automated fields hidden', async (t) => {
        const { page, form, problems } = await openForm(t, 'github-app-oauth');
        assert.deepEqual(await fields(form), []);
        assert.equal(await form.locator('p.muted').first().textContent(), 'You will sign in to GitHub App OAuth and allow access.');
        await connectInPopup(page, form, 'github-app-oauth');
        assert.deepEqual(problems, []);
    });

    it('INSTALL_PLUGIN: the plugin install link, the website sent back (no own OAuth app asked for)', async (t) => {
        const { page, form, problems } = await openForm(t, 'crisp-plugin-install', { ownApp: true });
        assert.deepEqual(await fields(form), []);
        assert.equal(await form.locator('p.muted').first().textContent(), 'You will sign in to Crisp (Plugin Install) and allow access.');
        await connectInPopup(page, form, 'crisp-plugin-install');
        assert.deepEqual(problems, []);
    });
});
