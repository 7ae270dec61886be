// Environment settings: API keys with scopes, webhook URLs and the signing
// key, environment variables (names only: values are secrets), connect UI
// branding. Every part needs its own scope; a part the key may not read
// says so.
import { api, h, table, time, run, confirmDialog, field, input, select, errorBox, toast, badge } from '../lib.js';

const reload = () => window.dispatchEvent(new HashChangeEvent('hashchange'));

async function section(title, fn) {
    try {
        return h('section', { class: 'card' }, h('h2', {}, title), await fn());
    } catch (err) {
        return h('section', { class: 'card' }, h('h2', {}, title), errorBox(err));
    }
}

async function keys(ctx) {
    const list = (await api('GET', '/environment/api-keys')).data || [];
    const rows = table(
        [
            { title: 'Name', cell: (k) => [k.name || '—', k.id === ctx.key?.id ? badge('this key', 'ok') : null] },
            { title: 'Key', cell: (k) => h('code', {}, '…' + k.hint) },
            { title: 'Scopes', cell: (k) => h('span', { class: 'row wrap' }, (k.scopes || []).map((s) => badge(s))) },
            { title: 'Created', cell: (k) => time(k.created_at) },
            {
                title: '',
                cell: (k) => {
                    if (!ctx.can('environment:keys:write') || k.id === ctx.key?.id) return null;
                    const b = h('button', { class: 'btn small danger', type: 'button' }, 'Revoke');
                    b.addEventListener('click', async () => {
                        if (!(await confirmDialog(`Revoke the key ${k.name || ''} …${k.hint}? Whoever uses it is refused at once.`, 'Revoke'))) return;
                        run(b, () => api('DELETE', `/environment/api-keys/${encodeURIComponent(k.id)}`), 'Revoked.', reload);
                    });
                    return b;
                }
            }
        ],
        list
    );
    if (!ctx.can('environment:keys:write')) return rows;
    const mine = ctx.key?.scopes || [];
    const all = mine.includes('environment:*') ? await allScopes() : mine;
    const form = h('form', { class: 'stack' });
    const create = h('button', { class: 'btn primary', type: 'submit' }, 'Create key');
    const shown = h('div', { 'aria-live': 'polite' });
    form.append(
        h('h3', {}, 'New key'),
        field('Name', input('name', { required: true, placeholder: 'read-only console' })),
        h('fieldset', { class: 'scopes' }, h('legend', {}, 'Scopes (only those this key holds)'), all.map((s) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'scope', value: s }), ' ', s))),
        create,
        shown
    );
    form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const fd = new FormData(form);
        run(create, async () => {
            const k = (await api('POST', '/environment/api-keys', { body: { name: fd.get('name'), scopes: fd.getAll('scope') } })).data;
            // Shown once, as the API answers it once.
            shown.replaceChildren(h('div', { class: 'notice ok' }, h('p', {}, 'Copy the key now: it is not shown again.'), h('code', { class: 'secret-once', tabindex: '0' }, k.key)));
            toast('Key created.');
        });
    });
    return [rows, form];
}

async function allScopes() {
    return [
        'environment:*',
        'environment:providers:read',
        'environment:integrations:read',
        'environment:integrations:read_credentials',
        'environment:integrations:write',
        'environment:connections:read',
        'environment:connections:read_credentials',
        'environment:connections:create',
        'environment:connections:update',
        'environment:connections:delete',
        'environment:connect_sessions:write',
        'environment:actions:execute',
        'environment:proxy',
        'environment:environment_variables:read',
        'environment:environment_variables:write',
        'environment:webhooks:read',
        'environment:webhooks:write',
        'environment:functions:read',
        'environment:functions:write',
        'environment:deploy',
        'environment:syncs:read',
        'environment:syncs:write',
        'environment:records:read',
        'environment:records:write',
        'environment:logs:read',
        'environment:mcp',
        'environment:settings:read',
        'environment:settings:write',
        'environment:keys:read',
        'environment:keys:write'
    ];
}

async function webhooks(ctx, env) {
    const can = ctx.can('environment:settings:write');
    const urls = env.webhook_urls || [];
    const form = h('form', { class: 'stack' });
    const save = h('button', { class: 'btn primary', type: 'submit' }, 'Save');
    const ws = env.webhook_settings || {};
    form.append(
        field('Primary URL', input('url1', { value: urls[0] || '', type: 'url', placeholder: 'https://app.example.com/webhooks' })),
        field('Secondary URL', input('url2', { value: urls[1] || '', type: 'url' })),
        h('fieldset', {}, h('legend', {}, 'Send'), Object.keys(ws).map((k) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'ws', value: k, checked: !!ws[k] }), ' ', k))),
        can ? save : null
    );
    if (!can) for (const el of form.elements) el.disabled = true;
    form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const fd = new FormData(form);
        const on = new Set(fd.getAll('ws'));
        const settings = Object.fromEntries(Object.keys(ws).map((k) => [k, on.has(k)]));
        run(save, () => api('PATCH', '/environment', { body: { webhook_urls: [fd.get('url1'), fd.get('url2')].filter(Boolean), webhook_settings: settings } }), 'Saved.', reload);
    });
    const rotate = h('button', { class: 'btn danger', type: 'button' }, 'Rotate the signing key');
    const shown = h('div', { 'aria-live': 'polite' });
    rotate.addEventListener('click', async () => {
        if (!(await confirmDialog('Make a new signing key? Webhooks are signed with it from now on: your application must verify with the new one.', 'Rotate'))) return;
        run(rotate, async () => {
            const k = (await api('POST', '/environment/webhook-signing-key')).data;
            shown.replaceChildren(h('div', { class: 'notice ok' }, h('p', {}, 'Copy the new signing key now: it is not shown again.'), h('code', { class: 'secret-once' }, k.signing_key)));
        });
    });
    return [form, h('p', {}, 'Signing key: ', env.has_signing_key ? badge('set', 'ok') : badge('none', 'warn'), ' ', can ? rotate : null), shown];
}

async function variables(ctx) {
    const vars = await api('GET', '/environment-variables');
    const can = ctx.can('environment:environment_variables:write');
    const list = table(
        [
            { title: 'Name', cell: (v) => h('code', {}, v.name) },
            { title: 'Value', cell: () => h('span', { class: 'muted' }, '•••••• (secret)') },
            {
                title: '',
                cell: (v) => {
                    if (!can) return null;
                    const b = h('button', { class: 'btn small danger', type: 'button' }, 'Remove');
                    b.addEventListener('click', () => run(b, () => api('PUT', '/environment-variables', { body: vars.filter((x) => x.name !== v.name) }), 'Removed.', reload));
                    return b;
                }
            }
        ],
        vars || [],
        { empty: 'No environment variable.' }
    );
    if (!can) return list;
    const form = h('form', { class: 'row wrap' });
    const set = h('button', { class: 'btn', type: 'submit' }, 'Set');
    form.append(field('Name', input('name', { required: true })), field('Value', input('value', { type: 'password', required: true })), set);
    form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const fd = new FormData(form);
        const next = vars.filter((x) => x.name !== fd.get('name')).concat([{ name: fd.get('name'), value: fd.get('value') }]);
        run(set, () => api('PUT', '/environment-variables', { body: next }), 'Variable set.', reload);
    });
    return [list, form];
}

async function branding(ctx, env) {
    const can = ctx.can('environment:settings:write');
    const ui = env.connect_ui || {};
    const form = h('form', { class: 'stack' });
    const save = h('button', { class: 'btn primary', type: 'submit' }, 'Save');
    form.append(
        field('Theme', select('theme', [['system', 'Follow the system'], ['light', 'Light'], ['dark', 'Dark']], ui.theme || 'system')),
        field('Primary colour (light)', h('input', { type: 'color', name: 'primary_color_light', value: ui.primary_color_light || '#00b2e3' })),
        field('Primary colour (dark)', h('input', { type: 'color', name: 'primary_color_dark', value: ui.primary_color_dark || '#00b2e3' })),
        h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'hide_secured_by', checked: !!ui.hide_secured_by }), ' Hide “Secured by”'),
        can ? save : null
    );
    if (!can) for (const el of form.elements) el.disabled = true;
    form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const fd = new FormData(form);
        run(save, () => api('PATCH', '/environment', { body: { connect_ui: { theme: fd.get('theme'), primary_color_light: fd.get('primary_color_light'), primary_color_dark: fd.get('primary_color_dark'), hide_secured_by: fd.get('hide_secured_by') === 'on' } } }), 'Saved.', reload);
    });
    return form;
}

export async function render(_params, _query, ctx) {
    let env = null;
    let envErr = null;
    try {
        env = (await api('GET', '/environment')).data;
    } catch (err) {
        envErr = err;
    }
    const envPart = (title, fn) => (env ? section(title, () => fn(ctx, env)) : Promise.resolve(h('section', { class: 'card' }, h('h2', {}, title), errorBox(envErr))));
    const parts = await Promise.all([
        section('API keys', () => keys(ctx)),
        envPart('Webhooks', webhooks),
        section('Environment variables', () => variables(ctx)),
        envPart('Connect UI branding', branding)
    ]);
    return [
        h('h1', {}, 'Settings', env ? h('span', { class: 'muted' }, ' · ' + env.name) : null),
        h('p', { class: 'muted' }, 'This key: ', ctx.key?.name || '—', ' …', ctx.key?.hint || '', ' · scopes: ', (ctx.key?.scopes || []).join(', ') || 'none'),
        h('div', { class: 'stack' }, parts)
    ];
}
