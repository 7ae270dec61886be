// The operations log: filter by kind, state, integration, connection and
// time; an entry opens with its details.
import { api, h, link, route, table, time, statusBadge, jsonView, filterForm, input, select, pager, field } from '../lib.js';

// Kinds of operation, as the log's type and operation.
export const kinds = {
    auth: { type: 'auth' },
    refresh: { type: 'auth', operation: 'refresh' },
    connection: { type: 'connection' },
    proxy: { type: 'proxy' },
    action: { type: 'action' },
    sync: { type: 'sync' },
    'on-event': { type: 'on-event' },
    webhook: { type: 'webhook' },
    deploy: { type: 'deploy' },
    integration: { type: 'integration' },
    function: { type: 'function' }
};

// toRFC3339 turns a datetime-local value into an RFC 3339 time.
function toRFC3339(v) {
    if (!v) return '';
    const t = new Date(v);
    return Number.isNaN(t.getTime()) ? '' : t.toISOString();
}

function toLocal(iso) {
    if (!iso) return '';
    const t = new Date(iso);
    if (Number.isNaN(t.getTime())) return '';
    const pad = (n) => String(n).padStart(2, '0');
    return `${t.getFullYear()}-${pad(t.getMonth() + 1)}-${pad(t.getDate())}T${pad(t.getHours())}:${pad(t.getMinutes())}`;
}

export async function render(_params, query) {
    const k = kinds[query.kind] || {};
    const page = await api('GET', '/logs/operations', {
        query: {
            type: k.type,
            operation: k.operation,
            status: query.status,
            integration: query.integration,
            connection_id: query.connection,
            since: query.since,
            until: query.until,
            cursor: query.cursor,
            limit: 50
        }
    });
    const form = filterForm('/logs', query, [
        field('Kind', select('kind', [['', 'Every kind'], ...Object.keys(kinds).map((x) => [x, x])], query.kind)),
        field('State', select('status', [['', 'Any state'], ['failure', 'Failed'], ['success', 'Succeeded']], query.status)),
        field('Integration', input('integration', { placeholder: 'unique key' })),
        field('Connection', input('connection', { placeholder: 'connection id' })),
        field('From', h('input', { type: 'datetime-local', name: 'since_local', value: toLocal(query.since) })),
        field('To', h('input', { type: 'datetime-local', name: 'until_local', value: toLocal(query.until) }))
    ]);
    // The time inputs are local; the API takes RFC 3339.
    form.addEventListener(
        'submit',
        (ev) => {
            ev.stopImmediatePropagation();
            ev.preventDefault();
            const fd = new FormData(form);
            const q = {};
            for (const [key, v] of fd.entries()) if (v && !key.endsWith('_local')) q[key] = v;
            q.since = toRFC3339(fd.get('since_local'));
            q.until = toRFC3339(fd.get('until_local'));
            location.hash = route('/logs', q);
        },
        { capture: true }
    );
    return [
        h('h1', {}, 'Operations log'),
        form,
        table(
            [
                { title: 'When', cell: (e) => time(e.created_at) },
                { title: 'Kind', cell: (e) => `${e.type} · ${e.operation}` },
                { title: 'State', cell: (e) => statusBadge(e.status) },
                { title: 'Message', cell: (e) => link(`/logs/${encodeURIComponent(e.id)}`, e.message || e.id) },
                { title: 'Integration', cell: (e) => (e.integration ? link(`/integrations/${encodeURIComponent(e.integration)}`, e.integration) : '—') },
                {
                    title: 'Connection',
                    cell: (e) => (e.connection_id && e.integration ? link(`/connections/${encodeURIComponent(e.integration)}/${encodeURIComponent(e.connection_id)}`, e.connection_id) : e.connection_id || '—')
                }
            ],
            page.data || [],
            { empty: 'No entry matches.', rowLink: (e) => `/logs/${encodeURIComponent(e.id)}` }
        ),
        pager('/logs', query, page.next_cursor)
    ];
}

export async function one(params) {
    const e = (await api('GET', `/logs/operations/${encodeURIComponent(params.id)}`)).data;
    const meta = e.meta || {};
    return [
        h('p', { class: 'crumbs' }, link('/logs', 'Operations log')),
        h('h1', {}, `${e.type} · ${e.operation} `, statusBadge(e.status)),
        h('p', { class: 'lead' }, e.message || ''),
        h(
            'dl',
            { class: 'card' },
            h('dt', {}, 'When'),
            h('dd', {}, e.created_at, ' (', time(e.created_at), ')'),
            h('dt', {}, 'Id'),
            h('dd', {}, h('code', {}, e.id)),
            h('dt', {}, 'Integration'),
            h('dd', {}, e.integration ? link(`/integrations/${encodeURIComponent(e.integration)}`, e.integration) : '—'),
            h('dt', {}, 'Connection'),
            h('dd', {}, e.connection_id && e.integration ? link(`/connections/${encodeURIComponent(e.integration)}/${encodeURIComponent(e.connection_id)}`, e.connection_id) : e.connection_id || '—'),
            meta.delivery_id ? [h('dt', {}, 'Webhook delivery'), h('dd', {}, link(`/deliveries/${encodeURIComponent(meta.delivery_id)}`, meta.delivery_id))] : null
        ),
        h('h2', {}, 'Details'),
        jsonView(meta),
        e.connection_id ? h('p', {}, link(route('/logs', { integration: e.integration, connection: e.connection_id }), 'Every entry of this connection')) : null
    ];
}
