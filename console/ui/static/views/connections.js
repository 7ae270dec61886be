// Connections: search by id or end user, filter by integration and health,
// cursor paging; a row opens the connection.
import { api, h, link, route, table, time, statusBadge, logo, filterForm, input, select, pager, field } from '../lib.js';

const statuses = [
    ['', 'Any health'],
    ['error', 'Any error'],
    ['auth_error', 'Auth error'],
    ['sync_error', 'Sync error'],
    ['paused', 'Paused sync'],
    ['ok', 'Healthy']
];

export function health(c) {
    const hl = c.health || {};
    const errs = c.errors || [];
    const out = [];
    if (hl.auth_error || errs.some((e) => e.type === 'auth')) out.push(statusBadge('auth_error'));
    if (hl.sync_error) out.push(statusBadge('sync_error'));
    if (hl.paused) out.push(statusBadge('paused'));
    return out.length ? h('span', { class: 'row wrap' }, out) : statusBadge('ok');
}

export async function render(_params, query) {
    const [list, ints] = await Promise.all([
        api('GET', '/connections', {
            query: { search: query.search, endUserId: query.end_user, integrationId: query.integration, status: query.status, limit: 50, cursor: query.cursor }
        }),
        api('GET', '/integrations').catch(() => ({ data: [] }))
    ]);
    const intOptions = [['', 'Every integration'], ...(ints.data || []).map((i) => [i.unique_key, i.display_name || i.unique_key])];
    const logos = Object.fromEntries((ints.data || []).map((i) => [i.unique_key, i.logo]));
    return [
        h('h1', {}, 'Connections'),
        filterForm('/connections', query, [
            field('Connection id', input('search', { placeholder: 'Search ids… (press /)', type: 'search' })),
            field('End user id', input('end_user', { placeholder: 'end_user.id' })),
            field('Integration', select('integration', intOptions, query.integration)),
            field('Health', select('status', statuses, query.status))
        ]),
        table(
            [
                { title: 'Connection', cell: (c) => link(route(`/connections/${encodeURIComponent(c.provider_config_key)}/${encodeURIComponent(c.connection_id)}`), c.connection_id) },
                { title: 'Integration', cell: (c) => h('span', { class: 'row' }, logo(logos[c.provider_config_key], c.provider), link(`/integrations/${encodeURIComponent(c.provider_config_key)}`, c.provider_config_key)) },
                { title: 'End user', cell: (c) => (c.end_user ? [c.end_user.display_name || c.end_user.email || '', ' ', h('span', { class: 'muted' }, c.end_user.id)] : h('span', { class: 'muted' }, '—')) },
                { title: 'Health', cell: health },
                { title: 'Errors', cell: (c) => (c.errors || []).map((e) => (e.log_id ? link(`/logs/${encodeURIComponent(e.log_id)}`, e.type, { class: 'badge bad' }) : statusBadge(e.type))) },
                { title: 'Created', cell: (c) => time(c.created) }
            ],
            list.connections || [],
            { empty: 'No connection matches.', rowLink: (c) => `/connections/${encodeURIComponent(c.provider_config_key)}/${encodeURIComponent(c.connection_id)}` }
        ),
        pager('/connections', query, list.next_cursor)
    ];
}
