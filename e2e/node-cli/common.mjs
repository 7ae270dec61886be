// Shared by the node:test files of e2e/node-cli, which TestNangoCLI (e2e/nango_cli_test.go)
// runs after it has deployed e2e/nango-project with the real nango CLI.
//
// Environment (set by the Go test; without it the files skip):
//   NANGO_HOST, NANGO_API_KEY   the reference server and its API key
//   NANGO_E2E_CLI               JSON: {key, connectionId, fakeURL, fakeKey, project}: the
//                               integration (fake), the connection made before the deployment,
//                               the fake provider API and the key it accepts, the project's
//                               directory (e2e/nango-project)

import assert from 'node:assert/strict';
import { Nango } from '@nangohq/node';

export const host = process.env.NANGO_HOST;
export const apiKey = process.env.NANGO_API_KEY;
export const cfg = process.env.NANGO_E2E_CLI ? JSON.parse(process.env.NANGO_E2E_CLI) : null;
export const skip = !host || !apiKey || !cfg ? 'NANGO_E2E_CLI is not set (TestNangoCLI sets it, see e2e/doc.go)' : false;
export const baseURL = (host ?? '').replace(/\/$/, '');
export const nango = skip ? null : new Nango({ host, apiKey });
export const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function describeErr(err) {
    if (err?.response) {
        return `${err.config?.method?.toUpperCase()} ${err.config?.url} -> ${err.response.status} ${JSON.stringify(err.response.data)}`;
    }
    return String(err?.stack ?? err);
}

// expectHttpError awaits promise, which must reject with an AxiosError of status and error.code
// code; it returns the error body's error object.
export async function expectHttpError(promise, status, code) {
    let err;
    try {
        const value = await promise;
        assert.fail(`expected HTTP ${status} ${code}, got success: ${JSON.stringify(value?.data ?? value)}`);
    } catch (e) {
        if (e instanceof assert.AssertionError) {
            throw e;
        }
        err = e;
    }
    assert.ok(err.isAxiosError && err.response, `expected an AxiosError with a response, got ${describeErr(err)}`);
    assert.equal(err.response.status, status, describeErr(err));
    assert.equal(err.response.data?.error?.code, code, describeErr(err));
    return err.response.data.error;
}

// fakeAPI calls the fake provider API directly, as the connection's owner.
export async function fakeAPI(method, path, body) {
    const res = await fetch(`${cfg.fakeURL}${path}`, {
        method,
        headers: { Authorization: `Bearer ${cfg.fakeKey}`, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body)
    });
    const text = await res.text();
    assert.ok(res.ok, `${method} ${path} on the fake API -> ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
}

// fakeItems lists every item of the fake API, following its cursor.
export async function fakeItems() {
    const out = [];
    let cursor = '';
    for (let i = 0; i < 100; i++) {
        const page = await fakeAPI('GET', `/items?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        out.push(...page.items);
        if (!page.next) {
            return out;
        }
        cursor = page.next;
    }
    assert.fail('the fake API never ends its listing');
}

// syncAndWait triggers the items sync on the connection and waits until a run finished after the
// trigger; it returns the sync's status.
export async function syncAndWait(connectionId) {
    const deadline = Date.now() + 60_000;
    let since;
    for (;;) {
        since = Date.now() - 1000; // the clocks are the same; a margin for rounding
        try {
            await nango.triggerSync(cfg.key, ['items'], connectionId);
            break;
        } catch (err) {
            // The run the deployment started (the sync auto-starts) may still be going on.
            assert.equal(err?.response?.data?.error?.code, 'sync_already_running', describeErr(err));
            assert.ok(Date.now() < deadline, 'the sync kept running for 60 s');
            await sleep(200);
        }
    }
    for (;;) {
        const res = await nango.syncStatus(cfg.key, ['items'], connectionId);
        assert.equal(res.syncs.length, 1, `syncStatus answered ${JSON.stringify(res)}`);
        const st = res.syncs[0];
        if (st.status !== 'RUNNING' && st.finishedAt && Date.parse(st.finishedAt) >= since) {
            return st;
        }
        assert.ok(Date.now() < deadline, `the triggered run of items did not finish within 60 s: ${JSON.stringify(st)}`);
        await sleep(200);
    }
}

// allRecords lists every record of model Item of the connection, deleted ones included.
export async function allRecords(connectionId) {
    const out = [];
    let cursor;
    for (let i = 0; i < 100; i++) {
        const res = await nango.listRecords({ providerConfigKey: cfg.key, connectionId, model: 'Item', limit: 100, ...(cursor ? { cursor } : {}) });
        assert.ok(Array.isArray(res.records), `listRecords answered ${JSON.stringify(res)}`);
        out.push(...res.records);
        if (!res.next_cursor) {
            return out;
        }
        cursor = res.next_cursor;
    }
    assert.fail('listRecords never ends');
}

// importConnection imports an API-key connection of the fake API.
export async function importConnection(connectionId) {
    const res = await fetch(`${baseURL}/connections`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ provider_config_key: cfg.key, connection_id: connectionId, credentials: { type: 'API_KEY', apiKey: cfg.fakeKey } })
    });
    const text = await res.text();
    assert.ok(res.ok, `POST /connections -> ${res.status} ${text}`);
}
