// End-to-end test of outgoing webhooks: a receiver written for Nango verifies this project's
// webhooks with the published @nangohq/node client (pinned to 0.71.10 in ../package.json),
// unchanged.
//
// Environment (set by e2e/e2e_test.go, TestNodeClient):
//   NANGO_HOST                     base URL of the server
//   NANGO_API_KEY                  a full-access API key of the server's dev environment
//   NANGO_E2E_WEBHOOK_SINK_URL     the host application's webhook endpoint, which the server was
//                                  started with as CONNECT_WEBHOOK_URLS (<sink>/hooks); GET
//                                  <sink>/received lists what it received, raw
//   NANGO_E2E_WEBHOOK_SIGNING_KEY  the dev environment's webhook signing key
//                                  (CONNECT_WEBHOOK_SIGNING_KEY)
//
// Without the last two the test is skipped (a server started by hand, see e2e/doc.go).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Nango } from '@nangohq/node';

const host = process.env.NANGO_HOST;
const apiKey = process.env.NANGO_API_KEY;
const sinkURL = process.env.NANGO_E2E_WEBHOOK_SINK_URL;
const signingKey = process.env.NANGO_E2E_WEBHOOK_SIGNING_KEY;
if (!host || !apiKey) {
    throw new Error('NANGO_HOST and NANGO_API_KEY must be set (see e2e/doc.go)');
}
const baseURL = host.replace(/\/$/, '');
const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

const nango = new Nango({ host, apiKey });

// received returns what the host's endpoint received so far: [{headers, body}], headers with
// lowercase names and string values, as Node's http module hands them to a receiver.
async function received() {
    const res = await fetch(`${sinkURL}/received`);
    assert.equal(res.status, 200);
    return res.json();
}

// waitForWebhook polls the endpoint until a webhook whose parsed body satisfies match arrives.
async function waitForWebhook(match, what) {
    const deadline = Date.now() + 30_000;
    for (;;) {
        const hook = (await received()).find((h) => {
            try {
                return match(JSON.parse(h.body));
            } catch {
                return false;
            }
        });
        if (hook) {
            return hook;
        }
        if (Date.now() > deadline) {
            assert.fail(`no ${what} arrived within 30 s`);
        }
        await new Promise((r) => setTimeout(r, 100));
    }
}

describe('outgoing webhooks', { skip: !sinkURL || !signingKey ? 'NANGO_E2E_WEBHOOK_SINK_URL and NANGO_E2E_WEBHOOK_SIGNING_KEY are not set' : false }, () => {
    it('verifyIncomingWebhookRequest accepts the auth webhook of a new connection', async () => {
        // A connection made through a connect session, as an end user's browser makes it
        // (@nangohq/frontend's auth() with an API key posts exactly this).
        const key = `e2e-hook-${run}`;
        await nango.createIntegration({ provider: 'e2e-echo', unique_key: key });
        try {
            const endUser = `hook-user-${run}`;
            const session = await nango.createConnectSession({ tags: { end_user_id: endUser }, allowed_integrations: [key] });
            const token = session.data.token;
            const res = await fetch(`${baseURL}/api-auth/api-key/${key}?connect_session_token=${encodeURIComponent(token)}&params%5Btenant%5D=t1`, {
                method: 'POST',
                headers: { 'Content-Type': 'application/json' },
                body: JSON.stringify({ apiKey: 'end-user-api-key' })
            });
            const made = await res.json();
            assert.equal(res.status, 200, `api-auth: ${JSON.stringify(made)}`);
            const connectionId = made.connectionId;
            assert.equal(typeof connectionId, 'string');

            const hook = await waitForWebhook(
                (b) => b.type === 'auth' && b.operation === 'creation' && b.connectionId === connectionId,
                `auth webhook for connection ${connectionId}`
            );
            const body = JSON.parse(hook.body);
            assert.equal(body.providerConfigKey, key);
            assert.equal(body.success, true);
            assert.equal(body.tags?.end_user_id, endUser);

            // The receiver of Nango's documentation, unchanged: the raw body and the request's
            // headers, with the webhook signing key.
            const receiver = new Nango({ host, apiKey, webhookSigningKey: signingKey });
            assert.equal(receiver.verifyIncomingWebhookRequest(hook.body, hook.headers), true, `headers: ${JSON.stringify(hook.headers)}`);
            // The same with the header names as another framework might case them.
            const cased = Object.fromEntries(Object.entries(hook.headers).map(([k, v]) => [k.replace(/(^|-)([a-z])/g, (m) => m.toUpperCase()), v]));
            assert.equal(receiver.verifyIncomingWebhookRequest(hook.body, cased), true);

            // It fails for a changed body, another key, and without the header.
            assert.equal(receiver.verifyIncomingWebhookRequest(hook.body.replace('"success":true', '"success":false'), hook.headers), false);
            const wrongKey = new Nango({ host, apiKey, webhookSigningKey: 'not-the-signing-key-0123456789' });
            assert.equal(wrongKey.verifyIncomingWebhookRequest(hook.body, hook.headers), false);
            const withoutHeader = { ...hook.headers };
            delete withoutHeader['x-nango-hmac-sha256'];
            assert.equal(receiver.verifyIncomingWebhookRequest(hook.body, withoutHeader), false);
            // The API key is not the signing key.
            const apiKeyOnly = new Nango({ host, apiKey });
            assert.equal(apiKeyOnly.verifyIncomingWebhookRequest(hook.body, hook.headers), false);

            // The legacy header, for receivers still on the deprecated verifyWebhookSignature.
            assert.equal(receiver.verifyWebhookSignature(hook.headers['x-nango-signature'], JSON.parse(hook.body)), true);
        } finally {
            await nango.deleteIntegration(key).catch(() => {});
        }
    });
});
