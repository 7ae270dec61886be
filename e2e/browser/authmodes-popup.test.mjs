// Browser end-to-end test of the popup auth modes: @nangohq/frontend's nango.auth(key) in
// headless Chromium connects an MCP_OAUTH2 integration (dynamic client registration), an
// MCP_OAUTH2_GENERIC one (the end user's MCP server URL, discovered) and a CUSTOM one
// (GitHub App installation plus user authorization), each through the popup and the
// WebSocket. e2e/authmodes_popup_test.go (TestPopupAuthModesBrowser) starts everything,
// then proxies and refreshes through the connections written to E2E_POPUP_RESULTS. Run
// without that variable (as TestConnectUIBrowser runs every browser file), it skips.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
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
