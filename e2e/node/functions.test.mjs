// End-to-end tests of functions through the published @nangohq/node client: the example
// functions of examples/functions (a GitHub issues sync and create-issue action, a Slack
// post-message action), registered by the reference server with CONNECT_EXAMPLE_FUNCTIONS, run
// against fake GitHub and Slack APIs; their deployments, actions (sync and async), sync controls
// and variants, and records (paging, filters, modifiedAfter, pruning).
//
// Environment (set by e2e/e2e_test.go, which starts the fakes; without it this file skips):
//   NANGO_HOST, NANGO_API_KEY   as for client.test.mjs
//   NANGO_E2E_FUNCTIONS         JSON: {github: {url, token, key, provider, owner, repo,
//                               variantRepo}, slack: {url, token, key, provider, channel,
//                               channelName}}: the fakes' base URLs and the tokens they accept,
//                               the integration keys the server registered the functions for
//                               and the providers (in its providers file) that call the fakes,
//                               the repository the connection's metadata names (with a second
//                               one of the same owner for a sync variant) and Slack's #general.
//
// The integrations are created when missing and kept; connections carry a per-run suffix.

import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Nango } from '@nangohq/node';

const host = process.env.NANGO_HOST;
const apiKey = process.env.NANGO_API_KEY;
const cfg = process.env.NANGO_E2E_FUNCTIONS ? JSON.parse(process.env.NANGO_E2E_FUNCTIONS) : null;
const skip = !host || !apiKey || !cfg ? 'NANGO_E2E_FUNCTIONS is not set (see e2e/doc.go)' : false;
const baseURL = (host ?? '').replace(/\/$/, '');

const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const gh = cfg?.github;
const sl = cfg?.slack;
const ghConn = `gh-${run}`;
const slackConn = `slack-${run}`;
const slackRevoked = `slack-revoked-${run}`;
const model = 'GithubIssue';
const recordFields = ['id', 'number', 'title', 'state', 'html_url', 'user_login', 'created_at', 'updated_at', 'closed_at'];

const nango = skip ? null : new Nango({ host, apiKey });

// ---------------------------------------------------------------------------------------------
// Helpers

function describeErr(err) {
    if (err?.response) {
        return `${err.config?.method?.toUpperCase()} ${err.config?.url} -> ${err.response.status} ${JSON.stringify(err.response.data)}`;
    }
    return String(err?.stack ?? err);
}

// expectHttpError awaits promise, which must reject with an AxiosError of status and error.code
// code; it returns the error body's error object.
async function expectHttpError(promise, status, code) {
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

async function importConnection(body) {
    const res = await fetch(`${baseURL}/connections`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body)
    });
    const text = await res.text();
    assert.ok(res.ok, `POST /connections -> ${res.status} ${text}`);
}

// ensureIntegration creates the integration unless it exists (a rerun against the same server).
async function ensureIntegration(uniqueKey, provider) {
    try {
        await nango.getIntegration({ uniqueKey });
        return;
    } catch (err) {
        if (err?.response?.status !== 404) {
            throw err;
        }
    }
    await nango.createIntegration({
        provider,
        unique_key: uniqueKey,
        credentials: { type: 'OAUTH2', client_id: `client-${run}`, client_secret: `secret-${run}` }
    });
}

// githubAPI calls the fake GitHub directly, as the connection's user.
async function githubAPI(method, path, body) {
    const res = await fetch(`${gh.url}${path}`, {
        method,
        headers: { Authorization: `Bearer ${gh.token}`, Accept: 'application/vnd.github+json', 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body)
    });
    const text = await res.text();
    assert.ok(res.ok, `${method} ${path} on the fake GitHub -> ${res.status} ${text}`);
    return JSON.parse(text);
}

// githubItems lists every issue and pull request of a repository of the owner, from the fake.
async function githubItems(repo) {
    const items = [];
    for (let page = 1; ; page++) {
        const batch = await githubAPI('GET', `/repos/${gh.owner}/${repo}/issues?state=all&per_page=100&page=${page}`);
        if (batch.length === 0) {
            return items;
        }
        items.push(...batch);
    }
}

// asRecord is the record the issues sync makes of an issue the API served.
function asRecord(is) {
    return {
        id: String(is.id),
        number: is.number,
        title: is.title,
        state: is.state,
        html_url: is.html_url,
        user_login: is.user.login,
        created_at: is.created_at,
        updated_at: is.updated_at,
        closed_at: is.closed_at
    };
}

// expectedRecords are the records of a repository's issues (not pull requests), by id.
async function expectedRecords(repo) {
    const out = new Map();
    for (const is of await githubItems(repo)) {
        if (!('pull_request' in is)) {
            out.set(String(is.id), asRecord(is));
        }
    }
    return out;
}

function withoutMeta(r) {
    const { _nango_metadata, ...rest } = r;
    return rest;
}

// assertRecordsMatch checks that records are exactly the expected ones, field by field.
function assertRecordsMatch(records, expected, what) {
    assert.equal(records.length, expected.size, `${what}: ${records.length} records, want ${expected.size}`);
    for (const r of records) {
        const want = expected.get(r.id);
        assert.ok(want, `${what}: record ${r.id} (#${r.number} ${r.title}) is not an issue of the repository`);
        assert.deepEqual(withoutMeta(r), want, `${what}: record ${r.id}`);
    }
}

// allRecords pages through listRecords with limit, following next_cursor; it returns the records
// and the number of pages.
async function allRecords(opts = {}, limit = 50) {
    const records = [];
    let cursor;
    let pages = 0;
    for (;;) {
        const res = await nango.listRecords({ providerConfigKey: gh.key, connectionId: ghConn, model, limit, ...opts, ...(cursor ? { cursor } : {}) });
        pages++;
        assert.ok(Array.isArray(res.records), `listRecords answered ${JSON.stringify(res)}`);
        assert.ok(res.records.length <= limit, `a page of ${res.records.length} records for limit ${limit}`);
        for (const r of res.records) {
            const m = r._nango_metadata;
            assert.equal(typeof m?.cursor, 'string', `record without a cursor: ${JSON.stringify(r)}`);
            assert.ok(['ADDED', 'UPDATED', 'DELETED'].includes(m.last_action), `last_action ${m.last_action}`);
        }
        records.push(...res.records);
        if (res.next_cursor === null || res.next_cursor === undefined || res.next_cursor === '') {
            return { records, pages };
        }
        assert.equal(typeof res.next_cursor, 'string');
        cursor = res.next_cursor;
        assert.ok(pages < 100, 'listRecords never ends');
    }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// statusOf returns the one status entry syncStatus answers for sync on a connection.
async function statusOf(sync, connectionId = ghConn) {
    const res = await nango.syncStatus(gh.key, [sync], connectionId);
    assert.equal(res.syncs.length, 1, `syncStatus(${JSON.stringify(sync)}) answered ${JSON.stringify(res)}`);
    return res.syncs[0];
}

// waitForRun waits until the latest run of sync finished at or after sinceMs, and returns the
// sync's status.
async function waitForRun(sync, sinceMs) {
    const deadline = Date.now() + 60_000;
    let st;
    for (;;) {
        st = await statusOf(sync);
        if (st.finishedAt && Date.parse(st.finishedAt) >= sinceMs && st.status !== 'RUNNING') {
            return st;
        }
        assert.ok(Date.now() < deadline, `the run of ${JSON.stringify(sync)} did not finish: ${JSON.stringify(st)}`);
        await sleep(100);
    }
}

// latestUpdate is the latest updated_at among items (the sync's checkpoint after a full listing).
function latestUpdate(items) {
    return items.map((is) => is.updated_at).sort().at(-1);
}

function assertISO(value, what) {
    assert.equal(typeof value, 'string', `${what} should be an ISO timestamp, got ${JSON.stringify(value)}`);
    assert.ok(!Number.isNaN(Date.parse(value)), `${what} is not a timestamp: ${value}`);
}

// ---------------------------------------------------------------------------------------------

describe('functions', { skip }, () => {
    let connectedAt;

    before(async () => {
        await ensureIntegration(gh.key, gh.provider);
        await ensureIntegration(sl.key, sl.provider);
        connectedAt = Date.now();
        // The issues sync starts by itself for the new connection (it auto-starts).
        await importConnection({
            provider_config_key: gh.key,
            connection_id: ghConn,
            access_token: gh.token,
            no_expiration: true,
            metadata: { owner: gh.owner, repo: gh.repo }
        });
        await importConnection({ provider_config_key: sl.key, connection_id: slackConn, access_token: sl.token, no_expiration: true });
        await importConnection({ provider_config_key: sl.key, connection_id: slackRevoked, access_token: 'xoxb-revoked', no_expiration: true });
    });

    it('lists the registered functions, reads one and its code, and refuses to delete one', async () => {
        const list = await nango.listFunctions({ uniqueKey: gh.key });
        assert.deepEqual(list.data.map((f) => `${f.type} ${f.name}`).sort(), ['action create-issue', 'sync issues']);
        assert.equal(list.pagination.total, 2);
        assert.equal(typeof list.pagination.page, 'number');
        assert.equal(typeof list.pagination.limit, 'number');

        const sync = list.data.find((f) => f.name === 'issues');
        assert.equal(sync.runs, '1h');
        assert.equal(sync.auto_start, true);
        assert.equal(sync.track_deletes, false);
        assert.equal(sync.enabled, true);
        assert.equal(sync.source, 'go');
        assert.equal(typeof sync.id, 'number');
        assertISO(sync.last_deployed, 'last_deployed');
        assert.deepEqual(sync.returns, [model]);
        const schema = sync.json_schema.$defs[model];
        // Property order is not kept (a stored JSON document), the required list's is.
        assert.deepEqual(Object.keys(schema.properties).sort(), [...recordFields].sort());
        assert.deepEqual(schema.required, recordFields.filter((f) => f !== 'closed_at'));

        const action = list.data.find((f) => f.name === 'create-issue');
        assert.equal(action.input, 'ActionInput_CreateIssue');
        assert.deepEqual(action.returns, ['ActionOutput_CreateIssue']);
        assert.deepEqual(action.json_schema.$defs.ActionInput_CreateIssue.required, ['title']);
        assert.deepEqual(Object.keys(action.json_schema.$defs.ActionOutput_CreateIssue.properties).sort(), ['id', 'number', 'url']);

        // Queries: type, search (case-insensitive), page and limit.
        const actions = await nango.listFunctions({ uniqueKey: gh.key }, { type: 'action' });
        assert.deepEqual(actions.data.map((f) => f.name), ['create-issue']);
        const searched = await nango.listFunctions({ uniqueKey: gh.key }, { type: 'sync', search: 'ISS' });
        assert.deepEqual(searched.data.map((f) => f.name), ['issues']);
        const page0 = await nango.listFunctions({ uniqueKey: gh.key }, { search: 'issue', limit: 1, page: 0 });
        const page1 = await nango.listFunctions({ uniqueKey: gh.key }, { search: 'issue', limit: 1, page: 1 });
        assert.equal(page0.data.length, 1);
        assert.equal(page1.data.length, 1);
        assert.notEqual(page0.data[0].name, page1.data[0].name);
        assert.deepEqual(page1.pagination, { total: 2, page: 1, limit: 1 });

        const one = await nango.getFunction({ uniqueKey: gh.key, name: 'create-issue' }, { type: 'action' });
        assert.equal(one.data.name, 'create-issue');
        assert.equal(one.data.type, 'action');
        assert.deepEqual(one.data.json_schema, action.json_schema);
        const untyped = await nango.getFunction({ uniqueKey: gh.key, name: 'issues' });
        assert.equal(untyped.data.type, 'sync');

        const code = await nango.getFunctionCode({ uniqueKey: gh.key, name: 'issues' }, { type: 'sync' });
        assert.equal(code.type, 'sync');
        assert.equal(typeof code.code, 'string');
        assert.ok(code.code.length > 0, 'the code is empty');

        await expectHttpError(nango.getFunction({ uniqueKey: gh.key, name: 'no-such-function' }), 404, 'not_found');
        await expectHttpError(nango.listFunctions({ uniqueKey: `no-such-integration-${run}` }), 404, 'unknown_provider_config');

        // Functions registered by the host belong to its deployment: the API does not delete them.
        await expectHttpError(nango.deleteFunction({ uniqueKey: gh.key, name: 'issues' }, { type: 'sync' }), 409, 'function_managed_by_deploy');
        await expectHttpError(nango.deleteFunction({ uniqueKey: gh.key, name: 'create-issue' }, { type: 'action' }), 409, 'function_managed_by_deploy');
        assert.equal((await nango.listFunctions({ uniqueKey: gh.key })).pagination.total, 2);

        const slack = await nango.listFunctions({ uniqueKey: sl.key });
        assert.deepEqual(slack.data.map((f) => `${f.type} ${f.name}`), ['action post-message']);
    });

    it('describes the functions in the scripts config and as provider templates', async () => {
        const config = await nango.getScriptsConfig();
        assert.ok(Array.isArray(config), `getScriptsConfig answered ${JSON.stringify(config)}`);
        const ghEntry = config.find((e) => e.providerConfigKey === gh.key);
        assert.ok(ghEntry, `no entry for ${gh.key}`);
        assert.equal(ghEntry.provider, gh.provider);
        assert.deepEqual(ghEntry['on-events'], []);
        assert.deepEqual(ghEntry.syncs.map((s) => s.name), ['issues']);
        assert.deepEqual(ghEntry.actions.map((a) => a.name), ['create-issue']);
        const sync = ghEntry.syncs[0];
        assert.equal(sync.type, 'sync');
        assert.equal(sync.runs, '1h');
        assert.equal(sync.auto_start, true);
        assert.deepEqual(sync.returns, [model]);
        assert.deepEqual(sync.models.map((m) => m.name), [model]);
        assert.deepEqual(sync.models[0].fields.map((f) => f.name).sort(), [...recordFields].sort());
        assert.deepEqual(sync.endpoints, [{ method: 'GET', path: '/issues', group: 'Issues' }]);
        assert.deepEqual(sync.scopes, ['repo']);
        assert.equal(ghEntry.actions[0].input, 'ActionInput_CreateIssue');
        const slEntry = config.find((e) => e.providerConfigKey === sl.key);
        assert.deepEqual(slEntry.actions.map((a) => a.name), ['post-message']);
        assert.deepEqual(slEntry.syncs, []);

        const openai = await nango.getScriptsConfig('openai');
        const createIssue = openai.data.find((f) => f.name === 'create-issue');
        assert.ok(createIssue, `no create-issue in ${JSON.stringify(openai)}`);
        assert.match(createIssue.description, /^Opens an issue/);
        assert.equal(createIssue.parameters.type, 'object');
        assert.deepEqual(createIssue.parameters.required, ['title']);
        assert.deepEqual(createIssue.parameters.properties.title, { type: 'string', description: "the issue's title (required)" });
        assert.equal(createIssue.parameters.properties.body.type, 'string');
        const postMessage = openai.data.find((f) => f.name === 'post-message');
        assert.deepEqual(postMessage.parameters.required, ['channel', 'text']);
        assert.equal(postMessage.parameters.properties.channel.description, 'the channel\'s id (C0123456789) or name (#general)');

        const ghTemplates = await nango.getProviderTemplates({ provider: 'github' });
        assert.deepEqual(ghTemplates.data.map((f) => `${f.type} ${f.name}`).sort(), ['action create-issue', 'sync issues']);
        const tplSync = ghTemplates.data.find((f) => f.name === 'issues');
        assert.deepEqual(tplSync.returns, [model]);
        assert.deepEqual(Object.keys(tplSync.json_schema.$defs[model].properties).sort(), [...recordFields].sort());
        const slTemplates = await nango.getProviderTemplates({ provider: 'slack' });
        assert.deepEqual(slTemplates.data.map((f) => `${f.type} ${f.name}`), ['action post-message']);
        // Templates belong to the providers they were added to, not to others.
        assert.deepEqual((await nango.getProviderTemplates({ provider: gh.provider })).data, []);
        await expectHttpError(nango.getProviderTemplates({ provider: `no-such-provider-${run}` }), 404, 'not_found');
    });

    it('syncs the repository\'s issues on the new connection, page by page, into records', async () => {
        const st = await waitForRun('issues', connectedAt);
        const items = await githubItems(gh.repo);
        const expected = await expectedRecords(gh.repo);
        assert.ok(items.length > 200 && expected.size < items.length, `the fake serves ${items.length} items (${expected.size} issues)`);
        assert.equal(st.status, 'SUCCESS', JSON.stringify(st));
        assert.equal(st.name, 'issues');
        assert.equal(st.variant, 'base');
        assert.equal(st.connection_id, ghConn);
        assert.equal(st.frequency, '1h');
        assert.equal(st.latestResult[model].added, expected.size);
        assert.equal(st.latestResult[model].updated, 0);
        assert.equal(st.recordCount[model], expected.size);
        assert.deepEqual(st.checkpoint, { updated_after: latestUpdate(items) });
        const next = Date.parse(st.nextScheduledSyncAt) - Date.parse(st.finishedAt);
        assert.ok(next > 55 * 60_000 && next <= 61 * 60_000, `next run ${st.nextScheduledSyncAt} after ${st.finishedAt}`);

        // Every record, in pages of 40 with the cursor: the issues the fake serves, no pull request.
        const { records, pages } = await allRecords({}, 40);
        if (expected.size % 40 !== 0) {
            assert.equal(pages, Math.ceil(expected.size / 40));
        }
        assertRecordsMatch(records, expected, 'after the first run');
        assert.equal(new Set(records.map((r) => r._nango_metadata.cursor)).size, records.length, 'cursors repeat');
        for (const r of records) {
            assert.equal(r._nango_metadata.last_action, 'ADDED');
            assert.equal(r._nango_metadata.deleted_at, null);
            assertISO(r._nango_metadata.first_seen_at, 'first_seen_at');
        }
        assert.ok(records.some((r) => r.state === 'closed' && r.closed_at) && records.some((r) => r.state === 'open' && r.closed_at === null));

        // Filters and ids.
        assert.equal((await allRecords({ filter: 'added' }, 100)).records.length, expected.size);
        assert.equal((await allRecords({ filter: 'updated' })).records.length, 0);
        assert.equal((await allRecords({ filter: 'deleted,updated' })).records.length, 0);
        const picked = [records[3].id, records[77].id];
        const byIds = await nango.listRecords({ providerConfigKey: gh.key, connectionId: ghConn, model, ids: picked });
        assert.deepEqual(byIds.records.map((r) => r.id).sort(), [...picked].sort());
        // A cursor resumes after the record it came from.
        const after = await nango.listRecords({ providerConfigKey: gh.key, connectionId: ghConn, model, cursor: records[9]._nango_metadata.cursor, limit: 3 });
        assert.deepEqual(after.records.map((r) => r.id), records.slice(10, 13).map((r) => r.id));
    });

    it('runs actions: post-message and create-issue, synchronously and asynchronously', async () => {
        // Slack: the message lands in #general and the action answers Slack's ok, channel and ts.
        const text = `Deploy ${run} finished`;
        const posted = await nango.triggerAction(sl.key, slackConn, 'post-message', { channel: `#${sl.channelName}`, text });
        assert.deepEqual(Object.keys(posted).sort(), ['channel', 'ok', 'ts']);
        assert.equal(posted.ok, true);
        assert.equal(posted.channel, sl.channel);
        assert.match(posted.ts, /^\d+\.\d+$/);
        const history = await (
            await fetch(`${sl.url}/conversations.history?channel=${sl.channel}`, { headers: { Authorization: `Bearer ${sl.token}` } })
        ).json();
        assert.equal(history.ok, true);
        assert.deepEqual({ text: history.messages[0].text, ts: history.messages[0].ts }, { text, ts: posted.ts });

        // Slack's {ok: false} answers are the action's ActionError with Slack's error.
        let e = await expectHttpError(nango.triggerAction(sl.key, slackConn, 'post-message', { channel: '#nowhere', text: 'x' }), 500, 'action_script_runtime_error');
        assert.deepEqual(e.payload, { error: 'channel_not_found' });
        e = await expectHttpError(nango.triggerAction(sl.key, slackRevoked, 'post-message', { channel: sl.channel, text: 'x' }), 500, 'action_script_runtime_error');
        assert.deepEqual(e.payload, { error: 'invalid_auth' });
        await expectHttpError(nango.triggerAction(sl.key, slackConn, 'post-message', { channel: sl.channel }), 400, 'invalid_action_input');
        await expectHttpError(nango.triggerAction(sl.key, slackConn, 'no-such-action', {}), 404, 'not_found');

        // GitHub, asynchronously: 202 with the status URL, polled until the output is there.
        const asyncTitle = `Async issue ${run}`;
        const handle = await nango.triggerActionAsync(gh.key, ghConn, 'create-issue', { title: asyncTitle, body: 'Opened by an async action.' });
        assert.match(handle.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
        assert.equal(handle.statusUrl, `/action/${handle.id}`);
        let result;
        const deadline = Date.now() + 30_000;
        for (;;) {
            try {
                result = await nango.getAsyncActionResult({ id: handle.id });
                break;
            } catch (err) {
                assert.equal(err?.response?.status, 404, `while pending: ${describeErr(err)}`);
                assert.equal(err.response.data?.error?.code, 'not_found');
                assert.ok(Date.now() < deadline, 'the async action has no result after 30 s');
                await sleep(100);
            }
        }
        assert.deepEqual(await nango.getAsyncActionResult({ statusUrl: handle.statusUrl }), result);
        const items = await githubItems(gh.repo);
        const created = items.find((is) => is.title === asyncTitle);
        assert.ok(created, 'the async action did not open the issue');
        assert.deepEqual(result, { id: String(created.id), number: created.number, url: created.html_url });
        assert.equal(created.body, 'Opened by an async action.');
        assert.equal(created.state, 'open');

        // Synchronously.
        const syncTitle = `Sync issue ${run}`;
        const out = await nango.triggerAction(gh.key, ghConn, 'create-issue', { title: syncTitle });
        const again = (await githubItems(gh.repo)).find((is) => is.title === syncTitle);
        assert.deepEqual(out, { id: String(again.id), number: again.number, url: again.html_url });
        assert.equal(again.number, created.number + 1);

        await expectHttpError(nango.triggerAction(gh.key, ghConn, 'create-issue', { body: 'no title' }), 400, 'invalid_action_input');
        await expectHttpError(nango.getAsyncActionResult({ id: '8c1b9a52-4a8e-4d43-9d53-3a3c8f1f3e11' }), 404, 'not_found');
    });

    it('picks up the changes since its checkpoint on triggerSync with opts', async () => {
        // Close an issue the first run saved, as a user would; the two issues the actions opened are new.
        const before = await githubItems(gh.repo);
        const toClose = before.find((is) => !('pull_request' in is) && is.state === 'open' && !is.title.includes(run));
        const closed = await githubAPI('PATCH', `/repos/${gh.owner}/${gh.repo}/issues/${toClose.number}`, { state: 'closed' });
        assert.equal(closed.state, 'closed');

        const mark = Date.now();
        const res = await nango.triggerSync(gh.key, ['issues'], ghConn, { reset: false });
        assert.equal(res.status, 200);
        assert.deepEqual(res.data, { success: true });
        const st = await waitForRun('issues', mark);
        assert.equal(st.status, 'SUCCESS', JSON.stringify(st));
        assert.equal(st.latestResult[model].added, 2);
        assert.equal(st.latestResult[model].updated, 1);
        const items = await githubItems(gh.repo);
        const expected = await expectedRecords(gh.repo);
        assert.equal(st.recordCount[model], expected.size);
        assert.deepEqual(st.checkpoint, { updated_after: latestUpdate(items) });

        const changed = await allRecords({ modifiedAfter: new Date(mark).toISOString() });
        const want = new Map([...expected].filter(([, r]) => r.title.includes(run) || r.number === toClose.number));
        assert.equal(want.size, 3);
        assertRecordsMatch(changed.records, want, 'modified after the trigger');
        const updated = changed.records.find((r) => r.number === toClose.number);
        assert.equal(updated._nango_metadata.last_action, 'UPDATED');
        assert.equal(updated.state, 'closed');
        assert.equal(updated.closed_at, closed.closed_at);
        assert.deepEqual(
            (await allRecords({ filter: 'updated' })).records.map((r) => r.id),
            [String(toClose.id)]
        );
        assertRecordsMatch((await allRecords()).records, expected, 'after the incremental run');
    });

    it('prunes records, and the deprecated sync_mode overload refreshes them', async () => {
        const expected = await expectedRecords(gh.repo);
        const { records } = await allRecords({}, 100);
        const until = records[9]._nango_metadata.cursor;
        const prunedIds = records.slice(0, 10).map((r) => r.id);
        assert.deepEqual(await nango.pruneRecords({ providerConfigKey: gh.key, connectionId: ghConn, model, untilCursor: until, limit: 5 }), {
            count: 5,
            has_more: true
        });
        assert.deepEqual(await nango.pruneRecords({ providerConfigKey: gh.key, connectionId: ghConn, model, untilCursor: until }), {
            count: 5,
            has_more: false
        });
        const isPruned = (r) => r._nango_metadata.pruned_at !== null && r.title === undefined;
        const pruned = async () => (await nango.listRecords({ providerConfigKey: gh.key, connectionId: ghConn, model, ids: prunedIds })).records;
        let got = await pruned();
        assert.equal(got.length, 10);
        assert.ok(got.every(isPruned), `not pruned: ${JSON.stringify(got.filter((r) => !isPruned(r)))}`);
        assertISO(got[0]._nango_metadata.pruned_at, 'pruned_at');
        assert.ok(!records[10]._nango_metadata.pruned_at);

        // sync_mode false (incremental): the issues did not change since the checkpoint, so the
        // pruned records stay pruned.
        let mark = Date.now();
        let res = await nango.triggerSync(gh.key, ['issues'], ghConn, false);
        assert.deepEqual([res.status, res.data], [200, { success: true }]);
        let st = await waitForRun('issues', mark);
        assert.equal(st.status, 'SUCCESS');
        assert.deepEqual([st.latestResult[model].added, st.latestResult[model].updated], [0, 0]);
        assert.ok((await pruned()).every(isPruned), 'an incremental run restored pruned records');

        // sync_mode true (full_refresh): the checkpoint is reset, every issue is listed again and
        // the pruned records get their content back.
        mark = Date.now();
        res = await nango.triggerSync(gh.key, ['issues'], ghConn, true);
        assert.equal(res.status, 200);
        st = await waitForRun('issues', mark);
        assert.equal(st.status, 'SUCCESS');
        assert.deepEqual([st.latestResult[model].added, st.latestResult[model].updated], [0, 10]);
        got = await pruned();
        assert.ok(got.every((r) => r._nango_metadata.pruned_at === null && r._nango_metadata.last_action === 'UPDATED'));
        assertRecordsMatch(got, new Map(prunedIds.map((id) => [id, expected.get(id)])), 'after the full refresh');

        // sync_mode full_refresh_and_clear_cache: the records are emptied, then all added again.
        mark = Date.now();
        res = await nango.triggerSync(gh.key, ['issues'], ghConn, 'full_refresh_and_clear_cache');
        assert.equal(res.status, 200);
        st = await waitForRun('issues', mark);
        assert.equal(st.status, 'SUCCESS');
        assert.deepEqual([st.latestResult[model].added, st.latestResult[model].updated], [expected.size, 0]);
        assert.equal(st.recordCount[model], expected.size);
        const all = (await allRecords({}, 100)).records;
        assertRecordsMatch(all, expected, 'after clearing the cache');
        for (const r of all) {
            assert.equal(r._nango_metadata.last_action, 'ADDED');
            assert.ok(Date.parse(r._nango_metadata.first_seen_at) >= mark - 1, `first_seen_at ${r._nango_metadata.first_seen_at} before the trigger`);
        }
        await expectHttpError(nango.triggerSync(gh.key, ['issues'], ghConn, 'sometimes'), 400, 'invalid_body');
        await expectHttpError(nango.triggerSync(gh.key, ['no-such-sync'], ghConn), 404, 'not_found');
    });

    it('pauses and starts the sync, and overrides its frequency', async () => {
        let res = await nango.pauseSync(gh.key, ['issues'], ghConn);
        assert.deepEqual([res.status, res.data], [200, { success: true }]);
        let st = await statusOf('issues');
        assert.equal(st.status, 'PAUSED');
        assert.equal(st.nextScheduledSyncAt, null);

        // Starting a paused sync runs it now, then every hour.
        const mark = Date.now();
        res = await nango.startSync(gh.key, ['issues'], ghConn);
        assert.deepEqual([res.status, res.data], [200, { success: true }]);
        st = await waitForRun('issues', mark);
        assert.equal(st.status, 'SUCCESS');
        assert.ok(Date.parse(st.nextScheduledSyncAt) > Date.now() + 55 * 60_000, `next run ${st.nextScheduledSyncAt}`);

        assert.deepEqual(await nango.updateSyncConnectionFrequency(gh.key, 'issues', ghConn, 'every 2 hours'), { frequency: '2h' });
        st = await statusOf('issues');
        assert.equal(st.frequency, '2h');
        const lead = Date.parse(st.nextScheduledSyncAt) - Date.now();
        assert.ok(lead > 115 * 60_000 && lead <= 120 * 60_000, `next run in ${lead} ms after 2h`);
        await expectHttpError(nango.updateSyncConnectionFrequency(gh.key, 'issues', ghConn, '10s'), 400, 'sync_interval_too_short');
        assert.deepEqual(await nango.updateSyncConnectionFrequency(gh.key, 'issues', ghConn, null), { frequency: '1h' });
        assert.equal((await statusOf('issues')).frequency, '1h');
    });

    it('runs a variant of the sync on another repository, with its own records', async () => {
        const variant = gh.variantRepo;
        const mark = Date.now();
        const created = await nango.createSyncVariant({ provider_config_key: gh.key, connection_id: ghConn, name: 'issues', variant });
        assert.equal(typeof created.id, 'string');
        assert.equal(created.name, 'issues');
        assert.equal(created.variant, variant);
        await expectHttpError(
            nango.createSyncVariant({ provider_config_key: gh.key, connection_id: ghConn, name: 'issues', variant }),
            409,
            'sync_variant_already_exists'
        );
        await expectHttpError(nango.createSyncVariant({ provider_config_key: gh.key, connection_id: ghConn, name: 'issues', variant: 'base' }), 400, 'invalid_uri_params');

        const st = await waitForRun({ name: 'issues', variant }, mark);
        const expected = await expectedRecords(variant);
        assert.equal(st.status, 'SUCCESS', JSON.stringify(st));
        assert.equal(st.variant, variant);
        assert.equal(st.latestResult[model].added, expected.size);
        assertRecordsMatch((await allRecords({ variant }, 5)).records, expected, 'the variant\'s records');
        assert.equal((await allRecords({}, 100)).records.length, (await expectedRecords(gh.repo)).size, 'the base records changed');

        // syncStatus: every sync ("*"), by name (the base variant), by name::variant and {name, variant}.
        const everything = await nango.syncStatus(gh.key, '*', ghConn);
        assert.deepEqual(everything.syncs.map((s) => `${s.name}::${s.variant}`).sort(), ['issues::base', `issues::${variant}`]);
        assert.deepEqual((await nango.syncStatus(gh.key, ['issues'], ghConn)).syncs.map((s) => s.variant), ['base']);
        assert.deepEqual((await nango.syncStatus(gh.key, [`issues::${variant}`], ghConn)).syncs.map((s) => s.variant), [variant]);
        assert.deepEqual((await nango.syncStatus(gh.key, [{ name: 'issues', variant }], ghConn)).syncs.map((s) => s.id), [created.id]);
        const allConnections = await nango.syncStatus(gh.key, '*');
        assert.ok(allConnections.syncs.filter((s) => s.connection_id === ghConn).length === 2, JSON.stringify(allConnections));

        // The frequency of one variant.
        assert.deepEqual(await nango.updateSyncConnectionFrequency(gh.key, { name: 'issues', variant }, ghConn, '30 minutes'), { frequency: '30m' });
        assert.equal((await statusOf({ name: 'issues', variant })).frequency, '30m');
        assert.equal((await statusOf('issues')).frequency, '1h');

        assert.deepEqual(await nango.deleteSyncVariant({ provider_config_key: gh.key, connection_id: ghConn, name: 'issues', variant }), { success: true });
        assert.deepEqual((await nango.syncStatus(gh.key, '*', ghConn)).syncs.map((s) => s.variant), ['base']);
        await expectHttpError(nango.deleteSyncVariant({ provider_config_key: gh.key, connection_id: ghConn, name: 'issues', variant }), 404, 'not_found');
    });
});
