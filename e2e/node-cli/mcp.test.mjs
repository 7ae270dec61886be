// The MCP servers of the reference server, driven by the official TypeScript client
// (@modelcontextprotocol/sdk, streamable HTTP) after TestNangoCLI deployed e2e/nango-project:
// the connection's deployed actions as tools (POST /mcp: listing, a run, the ActionError, input
// that breaks the schema, an unknown tool), the HTTP refusals (headers, connection, GET, scope),
// and the management tools (POST /mcp/manage) with the server's key and narrower ones.
//
// Besides common.mjs's environment, NANGO_E2E_MCP (JSON, set by the Go test):
//   keys   API keys of the dev environment by name: mcp (environment:mcp alone),
//          integrationsRead (environment:integrations:read alone)
//   title  the title of the one item create-item is to create; the Go test then requires the
//          fake API to have received exactly that one POST /items during this file

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { apiKey, baseURL, cfg, fakeItems, nango, skip } from './common.mjs';

const mcp = process.env.NANGO_E2E_MCP ? JSON.parse(process.env.NANGO_E2E_MCP) : null;
const skipMCP = skip || (mcp ? false : 'NANGO_E2E_MCP is not set (TestNangoCLI sets it, see e2e/doc.go)');

// The JSON-RPC body of Nango's MCP server to a GET or DELETE.
const methodNotAllowed = '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Method not allowed."},"id":null}';

// Every management tool, in the order tools/list answers them.
const manageTools = [
    'integrations_list',
    'integrations_get',
    'integrations_create',
    'integrations_update',
    'integrations_delete',
    'connect_session_create',
    'connections_list',
    'connections_get',
    'proxy_request',
    'functions_list',
    'syncs_status',
    'syncs_trigger',
    'records_list',
    'logs_list_operations',
    'logs_get_operation',
    'webhooks_list_deliveries'
];

const clients = [];
after(async () => {
    await Promise.all(clients.map((c) => c.close()));
});

// connect opens a session of the official client with the server at path, with key as Bearer
// and the extra headers.
async function connect(path, key, headers = {}) {
    const client = new Client({ name: 'connect-e2e', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${baseURL}${path}`), {
        requestInit: { headers: { Authorization: `Bearer ${key}`, ...headers } }
    });
    await client.connect(transport);
    clients.push(client);
    return client;
}

function connectionHeaders() {
    return { 'connection-id': cfg.connectionId, 'provider-config-key': cfg.key };
}

// text returns the one text content of a tool's result.
function text(res) {
    assert.equal(res.content?.length, 1, `the result has ${res.content?.length} contents: ${JSON.stringify(res)}`);
    assert.equal(res.content[0].type, 'text', JSON.stringify(res));
    return res.content[0].text;
}

// ok requires a successful result whose text is indented JSON (JSON.stringify(v, null, 2)), and
// returns its value.
function ok(res, what) {
    assert.ok(!res.isError, `${what} failed: ${JSON.stringify(res)}`);
    const value = JSON.parse(text(res));
    assert.equal(text(res), JSON.stringify(value, null, 2), `${what}: the text is not indented JSON`);
    return value;
}

// failed requires an isError result whose text and structured content are the same error body
// {error: {code, ...}} of code, and returns its error object.
function failed(res, code, what) {
    assert.equal(res.isError, true, `${what} did not fail: ${JSON.stringify(res)}`);
    const body = JSON.parse(text(res));
    assert.equal(body.error?.code, code, `${what}: ${text(res)}`);
    assert.deepEqual(res.structuredContent, body, `${what}: the structured content differs from the text`);
    return body.error;
}

// rpcError returns a predicate for assert.rejects: a JSON-RPC error of code whose message
// matches re.
function rpcError(code, re) {
    return (err) => {
        assert.ok(err instanceof McpError, `expected an McpError, got ${err?.stack ?? err}`);
        assert.equal(err.code, code, err.message);
        assert.match(err.message, re);
        return true;
    };
}

// api calls the JSON API with the server's key and requires a 2xx answer.
async function api(method, path, { body, headers = {} } = {}) {
    const res = await fetch(`${baseURL}${path}`, {
        method,
        headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json', ...headers },
        body: body === undefined ? undefined : JSON.stringify(body)
    });
    const t = await res.text();
    return { status: res.status, json: t ? JSON.parse(t) : null, text: t };
}

// post sends one JSON-RPC message to an MCP server as a client does.
async function post(path, key, headers, message = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }) {
    const res = await fetch(`${baseURL}${path}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(message)
    });
    const t = await res.text();
    let json;
    try {
        json = JSON.parse(t);
    } catch {
        assert.fail(`POST ${path} answered ${res.status} with a body that is not JSON: ${t}`);
    }
    return { status: res.status, json, text: t, headers: res.headers };
}

describe('the MCP server of a connection: its deployed actions as tools', { skip: skipMCP }, () => {
    it('lists the deployed actions, with their descriptions and input schemas', async () => {
        const client = await connect('/mcp', apiKey, connectionHeaders());
        assert.deepEqual(client.getServerVersion(), { name: 'connect-actions', version: '1.0.0' });
        assert.ok(client.getServerCapabilities()?.tools, JSON.stringify(client.getServerCapabilities()));

        const { tools } = await client.listTools();
        assert.deepEqual(tools.map((t) => t.name), ['create-item', 'whoami']);
        const [create, whoami] = tools;
        assert.equal(create.description, 'Creates an item in the fake API');
        assert.equal(whoami.description, 'Describes the connection: its id, a hash of its metadata and the host of its API');
        assert.equal(create.inputSchema.type, 'object', JSON.stringify(create.inputSchema));
        assert.equal(create.inputSchema.properties?.title?.type, 'string', JSON.stringify(create.inputSchema));
        assert.equal(create.inputSchema.properties?.n?.type, 'number', JSON.stringify(create.inputSchema));
        assert.deepEqual(create.inputSchema.required, ['title'], JSON.stringify(create.inputSchema));
        assert.equal(whoami.inputSchema.type, 'object', JSON.stringify(whoami.inputSchema));
        assert.deepEqual(Object.keys(whoami.inputSchema.properties ?? {}), [], JSON.stringify(whoami.inputSchema));
    });

    it('runs create-item: its output as JSON text, the item created in the fake API', async () => {
        const client = await connect('/mcp', apiKey, connectionHeaders());
        const before = await fakeItems();
        const out = ok(await client.callTool({ name: 'create-item', arguments: { title: mcp.title } }), 'create-item');
        const items = await fakeItems();
        assert.equal(items.length, before.length + 1);
        const created = items.at(-1);
        assert.deepEqual(created, { id: created.id, title: mcp.title, n: 0 });
        assert.deepEqual(out, { id: created.id, title: mcp.title });
    });

    it('answers the ActionError of create-item as POST /action/trigger does, as an isError result', async () => {
        const client = await connect('/mcp', apiKey, connectionHeaders());
        const before = (await fakeItems()).length;
        const res = await client.callTool({ name: 'create-item', arguments: { title: 'boom' } });
        const e = failed(res, 'action_script_runtime_error', 'create-item boom');
        assert.deepEqual(e.payload, { message: 'boom refused', code: 'refused' });

        const trigger = await api('POST', '/action/trigger', {
            body: { action_name: 'create-item', input: { title: 'boom' } },
            headers: { 'Connection-Id': cfg.connectionId, 'Provider-Config-Key': cfg.key }
        });
        assert.equal(trigger.status, 500, trigger.text);
        assert.deepEqual(JSON.parse(text(res)), trigger.json, 'the tool and POST /action/trigger answer different error bodies');
        assert.equal((await fakeItems()).length, before, 'the ActionError created an item');
    });

    it('refuses input that breaks the schema with invalid_action_input, and runs nothing', async () => {
        const client = await connect('/mcp', apiKey, connectionHeaders());
        const before = (await fakeItems()).length;
        for (const args of [{ title: 5 }, {}, { title: '' }]) {
            const res = await client.callTool({ name: 'create-item', arguments: args });
            failed(res, 'invalid_action_input', `create-item ${JSON.stringify(args)}`);
            const trigger = await api('POST', '/action/trigger', {
                body: { action_name: 'create-item', input: args },
                headers: { 'Connection-Id': cfg.connectionId, 'Provider-Config-Key': cfg.key }
            });
            assert.equal(trigger.status, 400, trigger.text);
            assert.deepEqual(JSON.parse(text(res)), trigger.json, `create-item ${JSON.stringify(args)}: the tool and POST /action/trigger answer different error bodies`);
        }
        assert.equal((await fakeItems()).length, before, 'a refused call created an item');
    });

    it('rejects an unknown tool with a JSON-RPC error', async () => {
        const client = await connect('/mcp', apiKey, connectionHeaders());
        await assert.rejects(client.callTool({ name: 'nope', arguments: {} }), rpcError(ErrorCode.InvalidParams, /unknown tool "nope"/));
        // The items sync is a function of the integration, not an action.
        await assert.rejects(client.callTool({ name: 'items', arguments: {} }), rpcError(ErrorCode.InvalidParams, /unknown tool "items"/));
    });

    it('serves a key of the scope environment:mcp alone: whoami answers what POST /action/trigger answers', async () => {
        const client = await connect('/mcp', mcp.keys.mcp, connectionHeaders());
        const { tools } = await client.listTools();
        assert.deepEqual(tools.map((t) => t.name), ['create-item', 'whoami']);
        const out = ok(await client.callTool({ name: 'whoami', arguments: {} }), 'whoami');
        assert.deepEqual(out, await nango.triggerAction(cfg.key, cfg.connectionId, 'whoami', {}));
        assert.equal(out.connectionId, cfg.connectionId);
    });
});

describe('the MCP servers over plain HTTP: refusals', { skip: skipMCP }, () => {
    it('needs both connection headers (400 invalid_headers)', async () => {
        for (const headers of [{}, { 'connection-id': cfg.connectionId }, { 'provider-config-key': cfg.key }]) {
            const res = await post('/mcp', apiKey, headers);
            assert.equal(res.status, 400, `${JSON.stringify(headers)}: ${res.text}`);
            assert.equal(res.json.error?.code, 'invalid_headers', `${JSON.stringify(headers)}: ${res.text}`);
        }
    });

    it('needs a connection that exists (400 unknown_connection)', async () => {
        for (const headers of [
            { 'connection-id': 'no-such-connection', 'provider-config-key': cfg.key },
            { 'connection-id': cfg.connectionId, 'provider-config-key': 'no-such-integration' }
        ]) {
            const res = await post('/mcp', apiKey, headers);
            assert.equal(res.status, 400, `${JSON.stringify(headers)}: ${res.text}`);
            assert.equal(res.json.error?.code, 'unknown_connection', `${JSON.stringify(headers)}: ${res.text}`);
        }
    });

    it('answers GET and DELETE with 405 and the JSON-RPC body of Nango', async () => {
        for (const path of ['/mcp', '/mcp/manage']) {
            for (const method of ['GET', 'DELETE']) {
                const res = await fetch(`${baseURL}${path}`, {
                    method,
                    headers: { Authorization: `Bearer ${apiKey}`, Accept: 'text/event-stream', ...connectionHeaders() }
                });
                assert.equal(res.status, 405, `${method} ${path}`);
                assert.equal(await res.text(), methodNotAllowed, `${method} ${path}`);
                assert.match(res.headers.get('content-type') ?? '', /^application\/json/, `${method} ${path}`);
            }
        }
    });

    it('refuses a key without environment:mcp (403) and an unknown key (401)', async () => {
        const narrow = await post('/mcp', mcp.keys.integrationsRead, connectionHeaders());
        assert.equal(narrow.status, 403, narrow.text);
        assert.equal(narrow.json.error?.code, 'forbidden', narrow.text);
        const unknown = await post('/mcp', `${apiKey}x`, connectionHeaders());
        assert.equal(unknown.status, 401, unknown.text);
        for (const path of ['/mcp', '/mcp/manage']) {
            const client = new Client({ name: 'connect-e2e', version: '1.0.0' });
            const transport = new StreamableHTTPClientTransport(new URL(`${baseURL}${path}`), {
                requestInit: { headers: { Authorization: `Bearer ${apiKey}x`, ...connectionHeaders() } }
            });
            await assert.rejects(client.connect(transport), (err) => {
                assert.equal(err.code, 401, String(err));
                return true;
            });
        }
    });
});

describe('the management MCP server: the service as tools', { skip: skipMCP }, () => {
    it('lists every management tool to a key of every scope, with annotations', async () => {
        const client = await connect('/mcp/manage', apiKey);
        assert.deepEqual(client.getServerVersion(), { name: 'connect-manage', version: '1.0.0' });
        const { tools } = await client.listTools();
        assert.deepEqual(tools.map((t) => t.name), manageTools);
        for (const t of tools) {
            assert.equal(typeof t.title, 'string', t.name);
            assert.ok(t.description.length > 20, t.name);
            assert.equal(t.inputSchema.type, 'object', `${t.name}: ${JSON.stringify(t.inputSchema)}`);
            assert.equal(typeof t.annotations?.readOnlyHint, 'boolean', `${t.name}: ${JSON.stringify(t.annotations)}`);
            assert.equal(typeof t.annotations?.destructiveHint, 'boolean', `${t.name}: ${JSON.stringify(t.annotations)}`);
        }
        const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
        assert.equal(byName.integrations_list.annotations.readOnlyHint, true);
        assert.equal(byName.integrations_list.annotations.destructiveHint, false);
        assert.equal(byName.integrations_delete.annotations.destructiveHint, true);
        assert.equal(byName.integrations_delete.annotations.readOnlyHint, false);
        assert.equal(byName.proxy_request.annotations.openWorldHint, true);
        assert.deepEqual(byName.connections_get.inputSchema.required, ['connection_id', 'provider_config_key']);
    });

    it('integrations_list answers GET /integrations', async () => {
        const client = await connect('/mcp/manage', apiKey);
        const out = ok(await client.callTool({ name: 'integrations_list', arguments: {} }), 'integrations_list');
        const fake = out.data?.find((i) => i.unique_key === cfg.key);
        assert.ok(fake, `integrations_list has no ${cfg.key}: ${JSON.stringify(out)}`);
        assert.equal(fake.provider, 'private-api-bearer');
        const direct = await api('GET', '/integrations');
        assert.equal(direct.status, 200, direct.text);
        assert.deepEqual(out, direct.json);
    });

    it('integrations_create, _update, _get and _delete manage an integration', async () => {
        const client = await connect('/mcp/manage', apiKey);
        const key = `mcp-tmp-${Date.now().toString(36)}`;
        ok(await client.callTool({ name: 'integrations_create', arguments: { provider: 'private-api-bearer', unique_key: key, display_name: 'From MCP' } }), 'integrations_create');
        failed(
            await client.callTool({ name: 'integrations_create', arguments: { provider: 'private-api-bearer', unique_key: key } }),
            'duplicate_integration',
            'integrations_create of an existing key'
        );
        ok(await client.callTool({ name: 'integrations_update', arguments: { unique_key: key, display_name: 'Renamed' } }), 'integrations_update');
        const got = ok(await client.callTool({ name: 'integrations_get', arguments: { unique_key: key } }), 'integrations_get');
        assert.equal(got.data?.display_name, 'Renamed', JSON.stringify(got));
        assert.equal(got.data?.provider, 'private-api-bearer', JSON.stringify(got));
        ok(await client.callTool({ name: 'integrations_delete', arguments: { unique_key: key } }), 'integrations_delete');
        const gone = failed(await client.callTool({ name: 'integrations_get', arguments: { unique_key: key } }), 'unknown_provider_config', 'integrations_get of a deleted integration');
        const direct = await api('GET', `/integrations/${key}`);
        assert.equal(direct.status, 404, direct.text);
        assert.deepEqual(gone, direct.json.error);
        // Arguments that break the tool's schema: refused before any request.
        failed(await client.callTool({ name: 'integrations_get', arguments: {} }), 'invalid_arguments', 'integrations_get without unique_key');
        failed(await client.callTool({ name: 'integrations_get', arguments: { unique_key: 7 } }), 'invalid_arguments', 'integrations_get of a number');
    });

    it('connections_get answers the connection', async () => {
        const client = await connect('/mcp/manage', apiKey);
        const out = ok(await client.callTool({ name: 'connections_get', arguments: { connection_id: cfg.connectionId, provider_config_key: cfg.key } }), 'connections_get');
        assert.equal(out.connection_id, cfg.connectionId, JSON.stringify(out));
        assert.equal(out.provider_config_key, cfg.key, JSON.stringify(out));
        assert.equal(out.provider, 'private-api-bearer', JSON.stringify(out));
        // The server's key reads credentials.
        assert.equal(out.credentials?.apiKey, cfg.fakeKey);
        const list = ok(await client.callTool({ name: 'connections_list', arguments: { connectionId: cfg.connectionId } }), 'connections_list');
        assert.deepEqual(list.connections?.map((c) => c.connection_id), [cfg.connectionId], JSON.stringify(list));
        failed(
            await client.callTool({ name: 'connections_get', arguments: { connection_id: 'no-such-connection', provider_config_key: cfg.key } }),
            'not_found',
            'connections_get of an unknown connection'
        );
    });

    it('proxy_request calls the fake API with the connection credentials', async () => {
        const client = await connect('/mcp/manage', apiKey);
        const res = await client.callTool({
            name: 'proxy_request',
            arguments: { method: 'GET', endpoint: '/items', connection_id: cfg.connectionId, provider_config_key: cfg.key, params: { limit: 3 } }
        });
        const out = ok(res, 'proxy_request');
        assert.deepEqual(res.structuredContent, out);
        assert.equal(out.status, 200, JSON.stringify(out));
        assert.match(out.content_type, /^application\/json/);
        const items = await fakeItems();
        assert.deepEqual(out.body, { items: items.slice(0, 3), next: 'off-3' });
    });

    it('connect_session_create answers a connect_link', async () => {
        const client = await connect('/mcp/manage', apiKey);
        const out = ok(
            await client.callTool({ name: 'connect_session_create', arguments: { end_user: { id: 'mcp-user' }, allowed_integrations: [cfg.key] } }),
            'connect_session_create'
        );
        const { token, connect_link, expires_at } = out.data ?? {};
        assert.match(token, /^nango_connect_session_[0-9a-f]{64}$/, JSON.stringify(out));
        assert.ok(connect_link.endsWith(`?session_token=${token}`), connect_link);
        assert.ok(Date.parse(expires_at) > Date.now(), expires_at);
    });

    it('syncs_status, functions_list and records_list answer what the API answers', async () => {
        const client = await connect('/mcp/manage', apiKey);
        const st = ok(
            await client.callTool({ name: 'syncs_status', arguments: { provider_config_key: cfg.key, syncs: ['items'], connection_id: cfg.connectionId } }),
            'syncs_status'
        );
        assert.equal(st.syncs?.length, 1, JSON.stringify(st));
        assert.equal(st.syncs[0].name, 'items');
        assert.equal(st.syncs[0].status, 'SUCCESS', JSON.stringify(st));
        assert.deepEqual(st, await nango.syncStatus(cfg.key, ['items'], cfg.connectionId));

        const fns = ok(await client.callTool({ name: 'functions_list', arguments: { unique_key: cfg.key, type: 'action' } }), 'functions_list');
        assert.deepEqual(fns.data.map((f) => f.name).sort(), ['create-item', 'whoami']);
        assert.deepEqual(fns, (await api('GET', `/integrations/${cfg.key}/functions?type=action`)).json);

        const recs = ok(
            await client.callTool({ name: 'records_list', arguments: { provider_config_key: cfg.key, connection_id: cfg.connectionId, model: 'Item', limit: 5 } }),
            'records_list'
        );
        assert.equal(recs.records.length, 5, JSON.stringify(recs));
        assert.deepEqual(recs, await nango.listRecords({ providerConfigKey: cfg.key, connectionId: cfg.connectionId, model: 'Item', limit: 5 }));
    });

    it('logs_list_operations finds the action runs, and logs_get_operation opens one', async () => {
        const client = await connect('/mcp/manage', apiKey);
        const list = async () =>
            ok(
                await client.callTool({ name: 'logs_list_operations', arguments: { type: 'action', connection_id: cfg.connectionId, limit: 100 } }),
                'logs_list_operations'
            );
        const createItemRuns = (page) => page.data.filter((e) => e.operation === 'run' && e.meta?.function === 'create-item');
        // A run's entry is written just after its answer: wait for both of create-item's.
        let page = await list();
        for (let i = 0; i < 200 && !(createItemRuns(page).some((e) => e.status === 'success') && createItemRuns(page).some((e) => e.status === 'failure')); i++) {
            await new Promise((resolve) => setTimeout(resolve, 25));
            page = await list();
        }
        const runs = createItemRuns(page);
        assert.ok(runs.some((e) => e.status === 'success'), JSON.stringify(page));
        assert.ok(runs.some((e) => e.status === 'failure'), `the ActionError's run is not logged: ${JSON.stringify(page)}`);
        assert.deepEqual(page, (await api('GET', `/logs/operations?type=action&connection_id=${encodeURIComponent(cfg.connectionId)}&limit=100`)).json);
        const failures = ok(
            await client.callTool({ name: 'logs_list_operations', arguments: { type: 'action', status: 'failure', connection_id: cfg.connectionId } }),
            'logs_list_operations of failures'
        );
        assert.ok(failures.data.length > 0 && failures.data.every((e) => e.status === 'failure'), JSON.stringify(failures));
        const one = ok(await client.callTool({ name: 'logs_get_operation', arguments: { id: runs[0].id } }), 'logs_get_operation');
        assert.deepEqual(one.data, runs[0]);
        const missing = await client.callTool({ name: 'logs_get_operation', arguments: { id: 'no-such-entry' } });
        assert.ok(missing.isError, JSON.stringify(missing));
        assert.equal(JSON.parse(text(missing)).error.code, 'not_found');
    });

    it('lists to a narrower key only the tools its scopes allow, and refuses the others', async () => {
        const client = await connect('/mcp/manage', mcp.keys.integrationsRead);
        const { tools } = await client.listTools();
        assert.deepEqual(tools.map((t) => t.name), ['integrations_list', 'integrations_get']);
        const out = ok(await client.callTool({ name: 'integrations_list', arguments: {} }), 'integrations_list with integrations:read');
        assert.ok(out.data?.some((i) => i.unique_key === cfg.key), JSON.stringify(out));
        await assert.rejects(
            client.callTool({ name: 'connections_list', arguments: {} }),
            rpcError(ErrorCode.InvalidParams, /environment:connections:read/)
        );
        await assert.rejects(
            client.callTool({ name: 'integrations_delete', arguments: { unique_key: cfg.key } }),
            rpcError(ErrorCode.InvalidParams, /environment:integrations:write/)
        );
        assert.equal((await api('GET', `/integrations/${cfg.key}`)).status, 200, 'the refused delete deleted the integration');

        // The actions server's scope alone allows no management tool.
        const mcpOnly = await connect('/mcp/manage', mcp.keys.mcp);
        assert.deepEqual((await mcpOnly.listTools()).tools, []);
    });
});
