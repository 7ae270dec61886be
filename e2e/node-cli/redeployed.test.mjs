// After TestNangoCLI redeployed e2e/nango-project without whoami: whoami is gone from the
// listings, the code route and the trigger; the items sync and create-item still run, and the
// sync's trackDeletes marks an item deleted from the fake API. See common.mjs for the environment.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { allRecords, cfg, expectHttpError, fakeAPI, fakeItems, nango, run, skip, syncAndWait } from './common.mjs';

describe('after a redeployment without whoami', { skip }, () => {
    it('has no whoami any more', async () => {
        const list = await nango.listFunctions({ uniqueKey: cfg.key });
        const names = list.data.map((f) => f.name);
        assert.ok(!names.includes('whoami'), `listFunctions still has whoami: ${names}`);
        assert.ok(names.includes('items') && names.includes('create-item'), `listFunctions: ${names}`);
        const entry = (await nango.getScriptsConfig()).find((e) => e.providerConfigKey === cfg.key);
        assert.deepEqual(entry.actions.map((a) => a.name), ['create-item']);
        await expectHttpError(nango.getFunctionCode({ uniqueKey: cfg.key, name: 'whoami' }), 404, 'not_found');
        await expectHttpError(nango.triggerAction(cfg.key, cfg.connectionId, 'whoami', {}), 404, 'not_found');
    });

    it('still runs create-item and the items sync, which marks a deleted item', async () => {
        const title = `after redeploy ${run}`;
        const out = await nango.triggerAction(cfg.key, cfg.connectionId, 'create-item', { title });
        const gone = (await fakeItems())[0];
        await fakeAPI('DELETE', `/items/${gone.id}`);

        const st = await syncAndWait(cfg.connectionId);
        assert.equal(st.status, 'SUCCESS', JSON.stringify(st));
        const items = await fakeItems();
        assert.ok(items.some((it) => it.id === out.id && it.title === title), 'create-item did not create the item');
        const records = await allRecords(cfg.connectionId);
        const live = records.filter((r) => r._nango_metadata.deleted_at === null);
        assert.deepEqual(live.map((r) => r.id).sort(), items.map((it) => it.id).sort());
        const deleted = records.find((r) => r.id === gone.id);
        assert.ok(deleted, `the record of the deleted item ${gone.id} is not listed`);
        assert.equal(deleted._nango_metadata.last_action, 'DELETED');
        assert.equal(typeof deleted._nango_metadata.deleted_at, 'string');
    });
});
