// Webhook deliveries: per destination and connection, status, the attempt
// timeline with response codes and latency, resend one or a filtered set.
import { api, h, link, route, table, time, statusBadge, jsonView, filterForm, input, select, pager, field, run, confirmDialog, toast } from '../lib.js';

const statuses = [
    ['', 'Any status'],
    ['failed', 'Failed'],
    ['pending', 'Pending (retrying)'],
    ['delivered', 'Delivered']
];
const types = [
    ['', 'Any type'],
    ['auth', 'auth'],
    ['sync', 'sync'],
    ['async_action', 'async_action'],
    ['forward', 'forward']
];

function connectionLink(d) {
    if (!d.connection_id || !d.provider_config_key) return d.connection_id || '—';
    return link(`/connections/${encodeURIComponent(d.provider_config_key)}/${encodeURIComponent(d.connection_id)}`, d.connection_id);
}

export async function render(_params, query, ctx) {
    const page = await api('GET', '/webhooks/deliveries', {
        query: { status: query.status, type: query.type, integration_id: query.integration, connection_id: query.connection, cursor: query.cursor, limit: 50 }
    });
    const rows = (page.data || []).filter((d) => !query.destination || d.url === query.destination);
    const destinations = [...new Set((page.data || []).map((d) => d.url))].sort();
    const resend = h('button', { class: 'btn', type: 'button' }, 'Resend the failed ones that match');
    resend.addEventListener('click', async () => {
        const what = [query.type && `type ${query.type}`, query.integration && `integration ${query.integration}`, query.connection && `connection ${query.connection}`].filter(Boolean).join(', ');
        if (!(await confirmDialog(`Send again every failed delivery${what ? ' of ' + what : ''}?`, 'Resend'))) return;
        run(resend, async () => {
            let total = 0;
            for (let i = 0; i < 100; i++) {
                const r = await api('POST', '/webhooks/deliveries/resend', {
                    body: { type: query.type || undefined, integration_id: query.integration || undefined, connection_id: query.connection || undefined, status: 'failed' }
                });
                total += r.data.resent;
                if (!r.data.has_more) break;
            }
            toast(`${total} sent again.`);
        }, null, () => window.dispatchEvent(new HashChangeEvent('hashchange')));
    });
    return [
        h('h1', {}, 'Webhook deliveries'),
        filterForm('/deliveries', query, [
            field('Status', select('status', statuses, query.status)),
            field('Type', select('type', types, query.type)),
            field('Integration', input('integration', { placeholder: 'unique key' })),
            field('Connection', input('connection', { placeholder: 'connection id' })),
            field('Destination', select('destination', [['', 'Every destination'], ...destinations.map((u) => [u, u])], query.destination))
        ]),
        ctx.can('environment:webhooks:write') ? h('p', {}, resend) : null,
        table(
            [
                { title: 'Created', cell: (d) => time(d.created_at) },
                { title: 'Type', cell: (d) => d.type },
                { title: 'Status', cell: (d) => statusBadge(d.status) },
                { title: 'Attempts', cell: (d) => String(d.attempts) },
                { title: 'Last answer', cell: (d) => (d.last_status_code ? String(d.last_status_code) : d.last_error ? h('span', { class: 'muted', title: d.last_error }, 'no answer') : '—') },
                { title: 'Destination', cell: (d) => h('code', {}, d.url) },
                { title: 'Connection', cell: connectionLink },
                { title: '', cell: (d) => link(`/deliveries/${encodeURIComponent(d.id)}`, 'Open') }
            ],
            rows,
            { empty: 'No delivery matches.', rowLink: (d) => `/deliveries/${encodeURIComponent(d.id)}` }
        ),
        pager('/deliveries', query, page.next_cursor)
    ];
}

export async function one(params, _query, ctx) {
    const d = (await api('GET', `/webhooks/deliveries/${encodeURIComponent(params.id)}`)).data;
    // The attempts are entries of the operations log.
    let attempts = [];
    let attemptsErr = null;
    if (ctx.can('environment:logs:read')) {
        try {
            attempts = (await api('GET', '/logs/operations', { query: { type: 'webhook', operation: 'delivery', delivery_id: d.id, limit: 100 } })).data || [];
        } catch (err) {
            attemptsErr = err;
        }
    }
    // In time order: a resend numbers its attempts from 1 again.
    attempts.sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at) || (a.meta?.attempt || 0) - (b.meta?.attempt || 0));
    const resend = h('button', { class: 'btn primary', type: 'button' }, 'Resend');
    resend.addEventListener('click', () =>
        run(resend, () => api('POST', `/webhooks/deliveries/${encodeURIComponent(d.id)}/resend`), 'Sent again.', () => window.dispatchEvent(new HashChangeEvent('hashchange')))
    );
    return [
        h('p', { class: 'crumbs' }, link(route('/deliveries', {}), 'Webhook deliveries')),
        h('h1', {}, `${d.type} webhook `, statusBadge(d.status)),
        h(
            'dl',
            { class: 'card' },
            h('dt', {}, 'Destination'),
            h('dd', {}, h('code', {}, d.url)),
            h('dt', {}, 'Connection'),
            h('dd', {}, connectionLink(d)),
            h('dt', {}, 'Created'),
            h('dd', {}, time(d.created_at)),
            h('dt', {}, 'Delivered'),
            h('dd', {}, time(d.delivered_at)),
            h('dt', {}, 'Next attempt'),
            h('dd', {}, time(d.next_attempt_at)),
            h('dt', {}, 'Last error'),
            h('dd', {}, d.last_error || '—')
        ),
        // A pending delivery is retried on its own; the API resends only
        // delivered and failed ones.
        ctx.can('environment:webhooks:write') && d.status !== 'pending' ? h('p', {}, resend) : null,
        h('h2', {}, 'Attempts'),
        attemptsErr
            ? h('p', { class: 'muted' }, 'The attempts need the scope environment:logs:read.')
            : h(
                  'ol',
                  { class: 'timeline' },
                  attempts.length
                      ? attempts.map((a) =>
                            h(
                                'li',
                                { class: a.status },
                                h('strong', {}, `Attempt ${a.meta?.attempt ?? '?'}`),
                                ' ',
                                statusBadge(a.status),
                                ' ',
                                a.meta?.status ? h('span', { class: 'badge' }, `HTTP ${a.meta.status}`) : h('span', { class: 'badge bad' }, 'no answer'),
                                ' ',
                                h('span', { class: 'muted' }, `${a.meta?.duration_ms ?? '?'} ms · `),
                                time(a.created_at),
                                a.meta?.error ? h('div', { class: 'muted' }, a.meta.error) : null,
                                a.meta?.response ? h('pre', { class: 'json small' }, String(a.meta.response)) : null,
                                ' ',
                                link(`/logs/${encodeURIComponent(a.id)}`, 'log entry')
                            )
                        )
                      : h('li', { class: 'muted' }, 'No attempt yet.')
              ),
        h('h2', {}, 'Body'),
        jsonView(d.body)
    ];
}
