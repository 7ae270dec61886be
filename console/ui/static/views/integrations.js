// Integrations: the list with logos, creation from the catalogue, editing
// credentials and scopes (secrets are write-only: typed, never shown), and
// the functions of each: enable or disable, version, last deployed, code.
import { api, h, link, route, table, time, statusBadge, logo, run, confirmDialog, field, input, select, toast, jsonView } from '../lib.js';

export async function render(_params, _query, ctx) {
    const ints = (await api('GET', '/integrations')).data || [];
    return [
        h('div', { class: 'row between' }, h('h1', {}, 'Integrations'), ctx.can('environment:integrations:write') ? link('/integrations/new', 'New integration', { class: 'btn primary' }) : null),
        table(
            [
                { title: '', cell: (i) => logo(i.logo, i.provider) },
                { title: 'Unique key', cell: (i) => link(`/integrations/${encodeURIComponent(i.unique_key)}`, i.unique_key) },
                { title: 'Name', cell: (i) => i.display_name || h('span', { class: 'muted' }, i.provider) },
                { title: 'Provider', cell: (i) => i.provider },
                { title: 'Connections', cell: (i) => link(route('/connections', { integration: i.unique_key }), 'List') },
                { title: 'Created', cell: (i) => time(i.created_at) }
            ],
            ints,
            { empty: 'No integration yet.', rowLink: (i) => `/integrations/${encodeURIComponent(i.unique_key)}` }
        )
    ];
}

// credentialFields are the form controls of an auth mode's app credentials.
function credentialFields(mode, current = {}) {
    const m = String(mode || '').toUpperCase();
    if (['OAUTH2', 'OAUTH1', 'TBA', 'MCP_OAUTH2'].includes(m)) {
        return [
            field('Client id', input('client_id', { value: current.client_id || '' })),
            field('Client secret', input('client_secret', { type: 'password', placeholder: current.type ? 'unchanged unless typed' : '' }), 'Write-only: the console never shows it.'),
            field('Scopes', input('scopes', { value: current.scopes || '', placeholder: 'comma-separated' })),
            field('Webhook secret', input('webhook_secret', { type: 'password', placeholder: current.type ? 'unchanged unless typed' : '' }))
        ];
    }
    if (m === 'APP') {
        return [
            field('App id', input('app_id', { value: current.app_id || '' })),
            field('App link', input('app_link', { value: current.app_link || '' })),
            field('Private key', h('textarea', { name: 'private_key', rows: '4', placeholder: current.type ? 'unchanged unless typed' : '' }))
        ];
    }
    return [h('p', { class: 'muted' }, `The ${m || 'provider'} mode needs no app credentials: end users give theirs.`)];
}

function credentialsOf(form, mode) {
    const fd = new FormData(form);
    const m = String(mode || '').toUpperCase();
    const creds = { type: m === 'MCP_OAUTH2' ? 'MCP_OAUTH2' : m };
    let any = false;
    for (const k of ['client_id', 'client_secret', 'scopes', 'webhook_secret', 'app_id', 'app_link', 'private_key']) {
        const v = fd.get(k);
        if (typeof v === 'string' && v !== '') {
            creds[k] = v;
            any = true;
        }
    }
    return any ? creds : undefined;
}

export async function create(_params, query) {
    const providers = (await api('GET', '/providers', { query: { search: query.q } })).data || [];
    const chosen = query.provider ? providers.find((p) => p.name === query.provider) || (await api('GET', `/providers/${encodeURIComponent(query.provider)}`)).data : null;
    const search = h('form', { class: 'filters', role: 'search', onsubmit: (ev) => { ev.preventDefault(); location.hash = route('/integrations/new', { q: new FormData(search).get('q') }); } },
        field('Provider', input('q', { type: 'search', value: query.q || '', placeholder: 'github, slack, …' })), h('button', { class: 'btn', type: 'submit' }, 'Search'));
    if (!chosen) {
        return [
            h('p', { class: 'crumbs' }, link('/integrations', 'Integrations')),
            h('h1', {}, 'New integration'),
            search,
            h('ul', { class: 'catalogue' }, providers.slice(0, 120).map((p) => h('li', {}, link(route('/integrations/new', { provider: p.name }), [logo(p.logo_url, p.display_name), ' ', p.display_name, ' ', h('span', { class: 'muted' }, p.auth_mode)]))))
        ];
    }
    const form = h('form', { class: 'stack' });
    const submit = h('button', { class: 'btn primary', type: 'submit' }, 'Create');
    form.append(
        field('Unique key', input('unique_key', { value: chosen.name, required: true })),
        field('Display name', input('display_name', { value: chosen.display_name })),
        ...credentialFields(chosen.auth_mode),
        submit
    );
    form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const fd = new FormData(form);
        run(submit, async () => {
            await api('POST', '/integrations', { body: { provider: chosen.name, unique_key: fd.get('unique_key'), display_name: fd.get('display_name') || undefined, credentials: credentialsOf(form, chosen.auth_mode) } });
            location.hash = `#/integrations/${encodeURIComponent(fd.get('unique_key'))}`;
        }, 'Integration created.');
    });
    return [h('p', { class: 'crumbs' }, link('/integrations', 'Integrations'), ' / ', link('/integrations/new', 'New')), h('h1', {}, logo(chosen.logo_url, chosen.display_name), ' ', chosen.display_name), form];
}

export async function one(params, _query, ctx) {
    const key = params.key;
    const it = (await api('GET', `/integrations/${encodeURIComponent(key)}`)).data;
    const provider = await api('GET', `/providers/${encodeURIComponent(it.provider)}`).then((r) => r.data).catch(() => ({}));
    let fns = [];
    let fnErr = null;
    try {
        fns = (await api('GET', `/integrations/${encodeURIComponent(key)}/functions`, { query: { limit: 100 } })).data || [];
    } catch (err) {
        fnErr = err;
    }
    const reload = () => window.dispatchEvent(new HashChangeEvent('hashchange'));
    const canWrite = ctx.can('environment:integrations:write');
    const form = h('form', { class: 'stack' });
    const save = h('button', { class: 'btn primary', type: 'submit' }, 'Save');
    form.append(field('Display name', input('display_name', { value: it.display_name || '' })), ...credentialFields(provider.auth_mode, { type: 'x', client_id: it.credentials?.client_id, scopes: it.credentials?.scopes }), canWrite ? save : null);
    form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const fd = new FormData(form);
        run(save, () => api('PATCH', `/integrations/${encodeURIComponent(key)}`, { body: { display_name: fd.get('display_name') || undefined, credentials: credentialsOf(form, provider.auth_mode) } }), 'Saved.', reload);
    });
    if (!canWrite) for (const el of form.elements) el.disabled = true;
    const del = h('button', { class: 'btn danger', type: 'button' }, 'Delete integration');
    del.addEventListener('click', async () => {
        if (!(await confirmDialog(`Delete the integration ${key} and every connection of it?`, 'Delete'))) return;
        run(del, () => api('DELETE', `/integrations/${encodeURIComponent(key)}`), 'Deleted.', () => (location.hash = '#/integrations'));
    });
    const canFn = ctx.can('environment:functions:write');
    return [
        h('p', { class: 'crumbs' }, link('/integrations', 'Integrations')),
        h('h1', {}, logo(it.logo, it.provider), ' ', it.display_name || key, ' ', h('span', { class: 'muted' }, key)),
        h('p', {}, link(route('/connections', { integration: key }), 'Its connections'), ' · ', link(route('/logs', { integration: key }), 'Its log'), ' · ', link(route('/deliveries', { integration: key }), 'Its webhook deliveries')),
        h('section', { class: 'cards' }, h('div', { class: 'card' }, h('h2', {}, 'Settings'), h('p', { class: 'muted' }, `${it.provider} · ${provider.auth_mode || ''}`), form)),
        h('h2', {}, 'Functions'),
        fnErr
            ? h('p', { class: 'muted' }, fnErr.message)
            : table(
                  [
                      { title: 'Function', cell: (f) => link(`/integrations/${encodeURIComponent(key)}/functions/${encodeURIComponent(f.type)}/${encodeURIComponent(f.name)}`, f.name) },
                      { title: 'Type', cell: (f) => f.type },
                      { title: 'Version', cell: (f) => f.version || '—' },
                      { title: 'Source', cell: (f) => f.source || '' },
                      { title: 'Last deployed', cell: (f) => time(f.last_deployed) },
                      {
                          title: 'Enabled',
                          cell: (f) => {
                              if (!canFn) return statusBadge(f.enabled ? 'enabled' : 'disabled');
                              const b = h('button', { class: 'btn small', type: 'button', 'aria-pressed': String(f.enabled) }, f.enabled ? 'Disable' : 'Enable');
                              b.addEventListener('click', () =>
                                  run(b, () => api('PATCH', `/integrations/${encodeURIComponent(key)}/functions/${encodeURIComponent(f.name)}`, { query: { type: f.type }, body: { enabled: !f.enabled } }), f.enabled ? 'Disabled.' : 'Enabled.', reload)
                              );
                              return h('span', { class: 'row' }, statusBadge(f.enabled ? 'enabled' : 'disabled'), b);
                          }
                      }
                  ],
                  fns,
                  { empty: 'No function is deployed to this integration.' }
              ),
        canWrite ? h('p', {}, del) : null
    ];
}

export async function code(params) {
    const { key, type, name } = params;
    const [fn, src] = await Promise.all([
        api('GET', `/integrations/${encodeURIComponent(key)}/functions/${encodeURIComponent(name)}`, { query: { type } }),
        api('GET', `/integrations/${encodeURIComponent(key)}/functions/${encodeURIComponent(name)}/code`, { query: { type } })
    ]);
    const f = fn.data;
    return [
        h('p', { class: 'crumbs' }, link('/integrations', 'Integrations'), ' / ', link(`/integrations/${encodeURIComponent(key)}`, key)),
        h('h1', {}, name, ' ', statusBadge(f.enabled ? 'enabled' : 'disabled')),
        h('p', { class: 'muted' }, `${f.type} · version ${f.version} · deployed `, time(f.last_deployed), f.sdk_version ? ` · SDK ${f.sdk_version}` : ''),
        h('h2', {}, 'Code'),
        h('pre', { class: 'code', tabindex: '0' }, src.code || ''),
        f.json_schema ? [h('h2', {}, 'Schema'), jsonView(f.json_schema)] : null
    ];
}
