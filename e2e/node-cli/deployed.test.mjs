// The functions of e2e/nango-project, deployed by TestNangoCLI with the real nango CLI, driven
// through the published @nangohq/node client: listings and code, the items sync over the fake
// API's cursor pagination, the actions create-item (sync, async, ActionError) and whoami, and the
// on-event setup for a connection made after the deployment. See common.mjs for the environment.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { allRecords, baseURL, apiKey, cfg, expectHttpError, describeErr, fakeItems, importConnection, nango, run, skip, sleep, syncAndWait } from './common.mjs';

function assertISO(value, what) {
    assert.equal(typeof value, 'string', `${what} should be an ISO timestamp, got ${JSON.stringify(value)}`);
    assert.ok(!Number.isNaN(Date.parse(value)), `${what} is not a timestamp: ${value}`);
}

describe('functions deployed with the nango CLI', { skip }, () => {
    it('lists them as deployed from the repo by CLI 0.71.10', async () => {
        const list = await nango.listFunctions({ uniqueKey: cfg.key });
        const names = list.data.map((f) => `${f.type} ${f.name}`).sort();
        for (const want of ['action create-item', 'action whoami', 'sync items']) {
            assert.ok(names.includes(want), `listFunctions has no ${want}: ${names}`);
        }
        for (const f of list.data) {
            assert.equal(f.source, 'repo', `${f.name}: ${JSON.stringify(f)}`);
            assert.equal(f.enabled, true, f.name);
        }
        const items = list.data.find((f) => f.name === 'items');
        assert.equal(items.version, '1.0.0');
        assert.equal(items.auto_start, true);
        assert.deepEqual(items.returns, ['Item']);

        const config = await nango.getScriptsConfig();
        const entry = config.find((e) => e.providerConfigKey === cfg.key);
        assert.ok(entry, `no scripts config entry for ${cfg.key}: ${JSON.stringify(config)}`);
        assert.deepEqual(entry.syncs.map((s) => s.name), ['items']);
        assert.deepEqual(entry.actions.map((a) => a.name).sort(), ['create-item', 'whoami']);
        assert.deepEqual(entry['on-events'].map((e) => e.name), ['setup']);
    });

    it('answers the TypeScript source of a function, as nango pull reads it', async () => {
        const want = fs.readFileSync(path.join(cfg.project, 'fake', 'actions', 'whoami.ts'), 'utf8');
        const code = await nango.getFunctionCode({ uniqueKey: cfg.key, name: 'whoami' });
        assert.deepEqual(code, { type: 'action', code: want });
        // The CLI's own request (pull.service.js): plain fetch with the key and ?type.
        const res = await fetch(`${baseURL}/integrations/${cfg.key}/functions/whoami/code?type=action`, { headers: { Authorization: `Bearer ${apiKey}` } });
        assert.equal(res.status, 200);
        assert.deepEqual(await res.json(), { type: 'action', code: want });
        const sync = await nango.getFunctionCode({ uniqueKey: cfg.key, name: 'items' }, { type: 'sync' });
        assert.equal(sync.code, fs.readFileSync(path.join(cfg.project, 'fake', 'syncs', 'items.ts'), 'utf8'));
    });

    it('syncs every item of the fake API, page by page', async () => {
        const st = await syncAndWait(cfg.connectionId);
        assert.equal(st.status, 'SUCCESS', JSON.stringify(st));
        const items = await fakeItems();
        assert.ok(items.length > 20, `the fake API has only ${items.length} items`);
        assert.deepEqual(st.recordCount, { Item: items.length }, JSON.stringify(st));
        assert.equal(st.checkpoint, null, 'the sync clears its checkpoint at the end');
        assert.deepEqual(Object.keys(st.latestResult ?? {}), ['Item'], JSON.stringify(st));
        const records = await allRecords(cfg.connectionId);
        assert.equal(records.length, items.length, `records ${records.length}, fake items ${items.length}`);
        const byId = new Map(records.map((r) => [r.id, r]));
        for (const it of items) {
            const r = byId.get(it.id);
            assert.ok(r, `no record of item ${it.id}`);
            const { _nango_metadata: m, ...rest } = r;
            assert.deepEqual(rest, { id: it.id, title: it.title, n: it.n });
            assert.equal(m.deleted_at, null);
            assert.ok(['ADDED', 'UPDATED'].includes(m.last_action), JSON.stringify(m));
            assertISO(m.first_seen_at, 'first_seen_at');
            assertISO(m.last_modified_at, 'last_modified_at');
            assert.equal(typeof m.cursor, 'string');
        }
    });

    it('runs create-item synchronously, and its ActionError and input validation', async () => {
        const before = (await fakeItems()).length;
        const out = await nango.triggerAction(cfg.key, cfg.connectionId, 'create-item', { title: 'x' });
        const items = await fakeItems();
        assert.equal(items.length, before + 1);
        const created = items.at(-1);
        assert.deepEqual(out, { id: created.id, title: 'x' });
        assert.equal(created.n, 0);

        const e = await expectHttpError(nango.triggerAction(cfg.key, cfg.connectionId, 'create-item', { title: 'boom' }), 500, 'action_script_runtime_error');
        assert.deepEqual(e.payload, { message: 'boom refused', code: 'refused' });
        await expectHttpError(nango.triggerAction(cfg.key, cfg.connectionId, 'create-item', { n: 1 }), 400, 'invalid_action_input');
        assert.equal((await fakeItems()).length, before + 1, 'a refused action created an item');
    });

    it('runs create-item asynchronously', async () => {
        const title = `async ${run}`;
        const handle = await nango.triggerActionAsync(cfg.key, cfg.connectionId, 'create-item', { title, n: 7 });
        assert.equal(handle.statusUrl, `/action/${handle.id}`);
        let result;
        const deadline = Date.now() + 60_000;
        for (;;) {
            try {
                result = await nango.getAsyncActionResult({ id: handle.id });
                break;
            } catch (err) {
                assert.equal(err?.response?.status, 404, `while pending: ${describeErr(err)}`);
                assert.ok(Date.now() < deadline, 'the async action has no result after 60 s');
                await sleep(200);
            }
        }
        const created = (await fakeItems()).find((it) => it.title === title);
        assert.ok(created, 'the async action did not create the item');
        assert.equal(created.n, 7);
        assert.deepEqual(result, { id: created.id, title });
    });

    it('runs whoami: getConnection, getMetadata, crypto, Buffer and URL', async () => {
        await nango.setMetadata(cfg.key, cfg.connectionId, { team: 'blue', baseUrl: 'https://api.example.org/v2' });
        const metadata = await nango.getMetadata(cfg.key, cfg.connectionId);
        const out = await nango.triggerAction(cfg.key, cfg.connectionId, 'whoami', {});
        assert.deepEqual(out, {
            connectionId: cfg.connectionId,
            providerConfigKey: cfg.key,
            metadataHash: crypto.createHash('sha256').update(JSON.stringify(metadata)).digest('hex'),
            token: Buffer.from(`${cfg.connectionId}:${cfg.key}`).toString('base64'),
            host: 'api.example.org'
        });
    });

    it('runs the post-connection-creation on-event for a new connection', async () => {
        const connectionId = `cli-new-${run}`;
        await importConnection(connectionId);
        const deadline = Date.now() + 60_000;
        let metadata;
        for (;;) {
            metadata = await nango.getMetadata(cfg.key, connectionId);
            if (metadata?.runs === 1) {
                break;
            }
            assert.ok(Date.now() < deadline, `the on-event setup did not set runs: 1 within 60 s: ${JSON.stringify(metadata)}`);
            await sleep(200);
        }
        assert.deepEqual(Object.keys(metadata).sort(), ['runs', 'setupAt']);
        assertISO(metadata.setupAt, 'setupAt');
    });
});
