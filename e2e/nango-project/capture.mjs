// capture.mjs: a tiny server that answers the nango CLI (0.71.10) like Nango does and records every
// request it gets (method, path, headers, body) as one JSON line per request in $CAPTURE_OUT.
//
//   CAPTURE_OUT=/tmp/requests.jsonl PORT=3999 node capture.mjs
//
// MODE changes the answer of POST /sync/deploy:
//   empty (default) → []
//   two             → two SyncDeploymentResult elements
//   error           → {error:{code,message,errors}} (HTTP 400) on both deploy routes
//   deploy-error    → the plan, then that error on POST /sync/deploy and /functions/deployments/bundle
// The dry-run calls (connections, integration, proxy) get plausible data for integration `fake`
// (provider github) and connection `c1`; GET /proxy/items pages with ?cursor= (two pages).
import http from 'node:http';
import fs from 'node:fs';

const port = Number(process.env.PORT || 3999);
const out = process.env.CAPTURE_OUT || 'requests.jsonl';
const mode = process.env.MODE || 'empty';

const emptyPlan = {
    newSyncs: [], updatedSyncs: [], deletedSyncs: [],
    newActions: [], updatedActions: [], deletedActions: [],
    newOnEventScripts: [], updatedOnEventScripts: [], deletedOnEventScripts: [],
    deletedModels: []
};
const emptyBundle = { created: [], updated: [], unchanged: [], deleted: [] };
const errorBody = {
    error: { code: 'concurrent_deployment', message: 'A deployment is already in progress', errors: [{ message: 'detail one' }, { message: 'detail two' }] }
};
const deployed = [
    { name: 'items', version: '1.0.0', providerConfigKey: 'fake', type: 'sync', last_deployed: '2026-01-01T00:00:00.000Z', input: null, models: ['Item'], id: 1, runs: 'every hour' },
    { name: 'create-item', version: '1.0.0', providerConfigKey: 'fake', type: 'action', last_deployed: '2026-01-01T00:00:00.000Z', input: 'ActionInput_fake_createitem', models: ['ActionOutput_fake_createitem'], id: 2, runs: null }
];
const connection = {
    id: 1, connection_id: 'c1', provider_config_key: 'fake', provider: 'github',
    created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-01T00:00:00.000Z', last_fetched_at: '2026-01-01T00:00:00.000Z',
    metadata: { team: 'blue' }, connection_config: {}, errors: [], end_user: null,
    credentials: { type: 'OAUTH2', access_token: 'gho_fake', raw: {} }
};
const pages = {
    '': { items: [{ id: 'i1', title: 'one', n: 1 }, { id: 'i2', title: 'two', n: 2 }], next: 'p2' },
    p2: { items: [{ id: 'i3', title: 'three', n: 3 }], next: '' }
};

function send(res, status, body) {
    if (body === undefined) {
        res.writeHead(status);
        return res.end();
    }
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(text);
}

function answer(req, url, body) {
    const p = url.pathname;
    if (p === '/cli/telemetry') return [204];
    if (p === '/sync/deploy/confirmation') return mode === 'error' ? [400, errorBody] : [200, emptyPlan];
    if (p === '/sync/deploy') return mode === 'error' || mode === 'deploy-error' ? [400, errorBody] : [200, mode === 'two' ? deployed : []];
    if (p === '/functions/deployments/bundle/preview') return mode === 'error' ? [400, errorBody] : [200, emptyBundle];
    if (p === '/functions/deployments/bundle') return mode === 'error' || mode === 'deploy-error' ? [400, errorBody] : [200, emptyBundle];
    if (p === '/connections') return [200, { connections: [{ ...connection, connection_id: url.searchParams.get('connectionId') || 'c1' }] }];
    if (p.startsWith('/connections/')) return [200, { ...connection, connection_id: decodeURIComponent(p.slice('/connections/'.length)) }];
    if (p.startsWith('/connection/metadata')) return [200, body ?? {}];
    if (p.startsWith('/connection/')) return [200, { ...connection, connection_id: decodeURIComponent(p.slice('/connection/'.length)) }];
    if (p.startsWith('/integrations/')) return [200, { data: { unique_key: p.split('/')[2], provider: 'github', display_name: 'GitHub', logo: '', created_at: '2026-01-01T00:00:00.000Z', updated_at: '2026-01-01T00:00:00.000Z' } }];
    if (p === '/environment-variables') return [200, []];
    if (p === '/proxy/items' && req.method === 'GET') return [200, pages[url.searchParams.get('cursor') || ''] ?? { items: [], next: '' }];
    if (p === '/proxy/items' && req.method === 'POST') return [201, { id: 'i9', title: body?.title ?? '' }];
    if (p.startsWith('/proxy/')) return [200, {}];
    return [404, { error: { code: 'not_found', message: `no route ${req.method} ${p}` } }];
}

http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        let body = null;
        if (raw) {
            try {
                body = JSON.parse(raw);
            } catch {
                body = raw;
            }
        }
        const url = new URL(req.url, 'http://capture');
        fs.appendFileSync(out, JSON.stringify({ method: req.method, path: req.url, headers: req.headers, body }) + '\n');
        const [status, reply] = answer(req, url, body);
        send(res, status, reply);
    });
}).listen(port, '127.0.0.1', () => console.log(`capture: listening on 127.0.0.1:${port}, mode ${mode}, writing ${out}`));
