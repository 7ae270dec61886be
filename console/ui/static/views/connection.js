// A connection: its credential state (never its secrets), metadata and tags,
// errors linked to their log entries, its syncs (trigger, pause, resume,
// cancel, frequency) and its records.
import { api, ApiError, h, link, route, table, time, statusBadge, jsonView, run, confirmDialog, pager, errorBox, badge } from '../lib.js';
import { health } from './connections.js';

function base(key, id) {
    return `/connections/${encodeURIComponent(key)}/${encodeURIComponent(id)}`;
}

function tabs(key, id, active) {
    const items = [
        ['', 'Overview'],
        ['syncs', 'Syncs'],
        ['records', 'Records']
    ];
    return h(
        'nav',
        { class: 'tabs', 'aria-label': 'Connection' },
        items.map(([t, label]) => link(base(key, id) + (t ? '/' + t : ''), label, { class: t === active ? 'active' : '', 'aria-current': t === active ? 'page' : null })),
        link(route('/logs', { integration: key, connection: id }), 'Logs'),
        link(route('/deliveries', { integration: key, connection: id }), 'Webhook deliveries')
    );
}

async function load(key, id, ctx) {
    // Credentials are fetched only by keys that may read them, and only
    // their state is shown: type, expiry, refresh.
    try {
        return await api('GET', `/connections/${encodeURIComponent(id)}`, { query: { provider_config_key: key } });
    } catch (err) {
        // A read of a connection whose token is due refreshes it first, and
        // answers 400 when that fails: the broken connections the console
        // is for. The list does not refresh: show the connection from it,
        // with the refresh's error in place of the credentials' state.
        if (!(err instanceof ApiError) || err.status !== 400 || !['refresh_token_external_error', 'connection_refresh_backoff'].includes(err.code)) throw err;
        const list = await api('GET', '/connections', { query: { connectionId: id, integrationId: key } });
        const c = (list.connections || []).find((x) => x.connection_id === id && x.provider_config_key === key);
        if (!c) throw err;
        return { ...c, created_at: c.created, refreshError: err };
    }
}

export async function render(params, _query, ctx) {
    const { key, id } = params;
    const tab = params.tab || '';
    if (tab === 'syncs') return syncs(key, id, ctx);
    if (tab === 'records') return models(key, id, ctx);
    const c = await load(key, id, ctx);
    // The last refresh, from the operations log when the key may read it.
    let lastRefresh = null;
    if (ctx.can('environment:logs:read')) {
        lastRefresh = await api('GET', '/logs/operations', { query: { type: 'auth', operation: 'refresh', integration: key, connection_id: id, limit: 1 } })
            .then((r) => (r.data || [])[0] || null)
            .catch(() => null);
    }
    const reload = () => window.dispatchEvent(new HashChangeEvent('hashchange'));
    const cred = c.credentials || null;
    const auth = c.auth || {};
    const expires = (cred && cred.expires_at) || auth.expires_at;
    const canUpdate = ctx.can('environment:connections:update');
    const refreshBtn = h('button', { class: 'btn', type: 'button' }, 'Refresh now');
    refreshBtn.addEventListener('click', () =>
        run(refreshBtn, () => api('GET', `/connections/${encodeURIComponent(id)}`, { query: { provider_config_key: key, force_refresh: 'true' } }), 'Refreshed.', reload)
    );
    const tagsText = h('textarea', { rows: '4', name: 'tags', spellcheck: 'false', readonly: !canUpdate }, JSON.stringify(c.tags || {}, null, 2));
    const metaText = h('textarea', { rows: '8', name: 'metadata', spellcheck: 'false', readonly: !canUpdate }, JSON.stringify(c.metadata || {}, null, 2));
    const saveTags = h('button', { class: 'btn', type: 'button' }, 'Save tags');
    saveTags.addEventListener('click', () =>
        run(saveTags, () => api('PATCH', `/connections/${encodeURIComponent(id)}`, { query: { provider_config_key: key }, body: { tags: parseJSON(tagsText.value) } }), 'Tags saved.', reload)
    );
    const saveMeta = h('button', { class: 'btn', type: 'button' }, 'Save metadata');
    saveMeta.addEventListener('click', () =>
        run(saveMeta, () => api('POST', '/connections/metadata', { body: { connection_id: id, provider_config_key: key, metadata: parseJSON(metaText.value) } }), 'Metadata saved.', reload)
    );
    const del = h('button', { class: 'btn danger', type: 'button' }, 'Delete connection');
    del.addEventListener('click', async () => {
        if (!(await confirmDialog(`Delete the connection ${id} of ${key}? Its credentials and records are removed.`, 'Delete'))) return;
        run(del, () => api('DELETE', `/connections/${encodeURIComponent(id)}`, { query: { provider_config_key: key } }), 'Deleted.', () => (location.hash = '#/connections'));
    });
    return [
        h('p', { class: 'crumbs' }, link('/connections', 'Connections'), ' / ', link(`/integrations/${encodeURIComponent(key)}`, key)),
        h('h1', {}, id, ' ', health(c)),
        tabs(key, id, ''),
        h(
            'section',
            { class: 'cards' },
            h(
                'div',
                { class: 'card' },
                h('h2', {}, 'Credentials'),
                c.refreshError ? errorBox(c.refreshError) : null,
                h(
                    'dl',
                    {},
                    h('dt', {}, 'Auth mode'),
                    h('dd', {}, auth.mode || (cred && cred.type) || '—'),
                    h('dt', {}, 'Expires'),
                    h('dd', {}, expires ? time(expires) : 'never, or unknown'),
                    h('dt', {}, 'Last refresh'),
                    h('dd', {}, lastRefresh ? [statusBadge(lastRefresh.status), ' ', time(lastRefresh.created_at), ' ', link(`/logs/${encodeURIComponent(lastRefresh.id)}`, 'log entry')] : h('span', { class: 'muted' }, 'none logged')),
                    h('dt', {}, 'Refresh'),
                    h('dd', {}, auth.last_refresh_failure ? [statusBadge('failure'), ' last failed ', time(auth.last_refresh_failure), ` (${auth.refresh_attempts} failed attempts)`] : statusBadge(c.refreshError ? 'failure' : 'ok')),
                    h('dt', {}, 'Created'),
                    h('dd', {}, time(c.created_at)),
                    h('dt', {}, 'Last used'),
                    h('dd', {}, time(c.last_fetched_at))
                ),
                ctx.can('environment:connections:read_credentials') ? refreshBtn : null
            ),
            h(
                'div',
                { class: 'card' },
                h('h2', {}, 'Errors'),
                (c.errors || []).length
                    ? h('ul', { class: 'plain' }, c.errors.map((e) => h('li', {}, statusBadge(e.type), ' ', e.log_id ? link(`/logs/${encodeURIComponent(e.log_id)}`, 'Open its log entry') : null)))
                    : h('p', { class: 'muted' }, 'None.'),
                h('h2', {}, 'End user'),
                c.end_user ? jsonView(c.end_user) : h('p', { class: 'muted' }, 'None.')
            )
        ),
        h('section', { class: 'cards' }, h('div', { class: 'card' }, h('h2', {}, 'Tags'), tagsText, canUpdate ? saveTags : null), h('div', { class: 'card' }, h('h2', {}, 'Metadata'), metaText, canUpdate ? saveMeta : null)),
        ctx.can('environment:connections:delete') ? h('p', {}, del) : null
    ];
}

function parseJSON(text) {
    try {
        return JSON.parse(text);
    } catch (err) {
        throw new Error('Not JSON: ' + err.message);
    }
}

async function syncs(key, id, ctx) {
    const st = await api('GET', '/sync/status', { query: { provider_config_key: key, syncs: '*', connection_id: id } });
    const reload = () => window.dispatchEvent(new HashChangeEvent('hashchange'));
    const can = ctx.can('environment:syncs:write');
    const act = (label, path, body, done, cls = 'btn') => {
        const b = h('button', { class: cls, type: 'button' }, label);
        b.addEventListener('click', () => run(b, () => api('POST', path, { body }), done, reload));
        return b;
    };
    const rows = st.syncs || [];
    return [
        h('p', { class: 'crumbs' }, link('/connections', 'Connections'), ' / ', link(`/integrations/${encodeURIComponent(key)}`, key)),
        h('h1', {}, id, ' · syncs'),
        tabs(key, id, 'syncs'),
        table(
            [
                { title: 'Sync', cell: (s) => [s.name, s.variant && s.variant !== 'base' ? h('span', { class: 'muted' }, ' ::' + s.variant) : null] },
                { title: 'Status', cell: (s) => statusBadge(s.status) },
                { title: 'Last run', cell: (s) => [time(s.finishedAt), ' ', s.latestExecutionStatus ? statusBadge(s.latestExecutionStatus.toLowerCase()) : null] },
                { title: 'Next run', cell: (s) => time(s.nextScheduledSyncAt) },
                { title: 'Frequency', cell: (s) => (can ? frequencyForm(key, id, s, reload) : s.frequency) },
                { title: 'Records', cell: (s) => Object.entries(s.recordCount || {}).map(([m, n]) => link(base(key, id) + '/records/' + encodeURIComponent(m), `${m}: ${n}`, { class: 'badge' })) },
                {
                    title: 'Actions',
                    cell: (s) => {
                        if (!can) return h('span', { class: 'muted' }, 'read-only');
                        const ref = { provider_config_key: key, connection_id: id, syncs: [s.variant && s.variant !== 'base' ? `${s.name}::${s.variant}` : s.name] };
                        return h(
                            'span',
                            { class: 'row wrap' },
                            act('Run', '/sync/trigger', { ...ref, sync_mode: 'incremental' }, 'Run requested.'),
                            act('Full resync', '/sync/trigger', { ...ref, sync_mode: 'full_refresh' }, 'Full resync requested.'),
                            s.status === 'PAUSED' ? act('Resume', '/sync/start', ref, 'Resumed.') : act('Pause', '/sync/pause', ref, 'Paused.'),
                            s.status === 'RUNNING' ? act('Cancel run', '/sync/cancel', ref, 'Cancel requested.', 'btn danger') : null
                        );
                    }
                }
            ],
            rows,
            { empty: 'No sync runs for this connection.' }
        )
    ];
}

function frequencyForm(key, id, s, reload) {
    const inp = h('input', { name: 'frequency', value: s.frequency || '', size: '10', 'aria-label': `Frequency of ${s.name}` });
    const b = h('button', { class: 'btn small', type: 'submit' }, 'Set');
    return h(
        'form',
        {
            class: 'row',
            onsubmit: (ev) => {
                ev.preventDefault();
                run(b, () => api('PUT', '/sync/update-connection-frequency', { body: { provider_config_key: key, connection_id: id, sync_name: s.name, sync_variant: s.variant || undefined, frequency: inp.value || null } }), 'Frequency set.', reload);
            }
        },
        inp,
        b
    );
}

async function models(key, id) {
    const st = await api('GET', '/sync/status', { query: { provider_config_key: key, syncs: '*', connection_id: id } });
    const counts = {};
    for (const s of st.syncs || []) for (const [m, n] of Object.entries(s.recordCount || {})) counts[m] = (counts[m] || 0) + n;
    return [
        h('p', { class: 'crumbs' }, link('/connections', 'Connections'), ' / ', link(`/integrations/${encodeURIComponent(key)}`, key)),
        h('h1', {}, id, ' · records'),
        tabs(key, id, 'records'),
        table(
            [
                { title: 'Model', cell: ([m]) => link(base(key, id) + '/records/' + encodeURIComponent(m), m) },
                { title: 'Records', cell: ([, n]) => String(n) }
            ],
            Object.entries(counts).sort(),
            { empty: 'No records: no sync of this connection has saved any.', rowLink: ([m]) => base(key, id) + '/records/' + encodeURIComponent(m) }
        )
    ];
}

// records lists the records of one model by cursor, deleted ones marked.
export async function records(params, query) {
    const { key, id, model } = params;
    let page;
    try {
        page = await api('GET', '/records', { query: { model, cursor: query.cursor, limit: 50 }, headers: { 'Connection-Id': id, 'Provider-Config-Key': key } });
    } catch (err) {
        return [h('h1', {}, model), tabs(key, id, 'records'), errorBox(err)];
    }
    const recs = page.records || [];
    return [
        h('p', { class: 'crumbs' }, link('/connections', 'Connections'), ' / ', link(base(key, id) + '/records', id + ' · records')),
        h('h1', {}, model),
        tabs(key, id, 'records'),
        recs.length
            ? h(
                  'ol',
                  { class: 'records' },
                  recs.map((r) => {
                      const md = r._nango_metadata || {};
                      return h(
                          'li',
                          { class: md.deleted_at ? 'deleted' : '' },
                          h('details', {}, h('summary', {}, h('code', {}, String(r.id)), ' ', md.deleted_at ? badge('deleted ' + new Date(md.deleted_at).toISOString(), 'bad') : badge(md.last_action || 'saved'), ' ', h('span', { class: 'muted' }, md.last_modified_at || '')), jsonView(r))
                      );
                  })
              )
            : h('p', { class: 'empty' }, 'No records.'),
        pager(route(base(key, id) + '/records/' + encodeURIComponent(model)), query, page.next_cursor)
    ];
}
