// The operations console: the shell (sign-in with an API key, navigation,
// theme) and the router. Each screen is a module of views/.
import { api, ApiError, session, h, mount, link, errorBox } from './lib.js';
import * as overview from './views/overview.js';
import * as connections from './views/connections.js';
import * as connection from './views/connection.js';
import * as logs from './views/logs.js';
import * as deliveries from './views/deliveries.js';
import * as integrations from './views/integrations.js';
import * as settings from './views/settings.js';

// The routes, most specific first: [pattern, view, nav item].
const routes = [
    ['/connections/:key/:id/records/:model', connection.records, 'connections'],
    ['/connections/:key/:id/:tab', connection.render, 'connections'],
    ['/connections/:key/:id', connection.render, 'connections'],
    ['/connections', connections.render, 'connections'],
    ['/logs/:id', logs.one, 'logs'],
    ['/logs', logs.render, 'logs'],
    ['/deliveries/:id', deliveries.one, 'deliveries'],
    ['/deliveries', deliveries.render, 'deliveries'],
    ['/integrations/new', integrations.create, 'integrations'],
    ['/integrations/:key/functions/:type/:name', integrations.code, 'integrations'],
    ['/integrations/:key', integrations.one, 'integrations'],
    ['/integrations', integrations.render, 'integrations'],
    ['/settings', settings.render, 'settings'],
    ['/', overview.render, 'overview']
];

const nav = [
    ['overview', '/', 'Overview'],
    ['connections', '/connections', 'Connections'],
    ['logs', '/logs', 'Logs'],
    ['deliveries', '/deliveries', 'Webhook deliveries'],
    ['integrations', '/integrations', 'Integrations'],
    ['settings', '/settings', 'Settings']
];

// ctx is what every view gets: the key's identity and scopes.
const ctx = {
    key: null,
    // can reports whether the key holds a scope (environment:* holds all).
    can(scope) {
        const s = (this.key && this.key.scopes) || [];
        return s.includes('environment:*') || s.includes(scope);
    },
    get readOnly() {
        const s = (this.key && this.key.scopes) || [];
        return !s.some((x) => x === 'environment:*' || /:(write|create|update|delete|execute)$/.test(x) || x === 'environment:proxy');
    }
};

function match(pattern, path) {
    const p = pattern.split('/').filter(Boolean);
    const a = path.split('/').filter(Boolean);
    if (p.length !== a.length) return null;
    const params = {};
    for (let i = 0; i < p.length; i++) {
        if (p[i].startsWith(':')) params[p[i].slice(1)] = decodeURIComponent(a[i]);
        else if (p[i] !== a[i]) return null;
    }
    return params;
}

function parseHash() {
    const raw = location.hash.replace(/^#/, '') || '/';
    const [path, qs] = raw.split('?');
    return { path: path || '/', query: Object.fromEntries(new URLSearchParams(qs || '')) };
}

// ---- Theme ----------------------------------------------------------------

const THEME = 'connect.console.theme';

function applyTheme(theme) {
    const t = theme === 'dark' || theme === 'light' ? theme : matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
    document.documentElement.dataset.theme = t;
}

// brand applies the environment's connect UI colours, when the key may read them.
async function brand() {
    applyTheme(localStorage.getItem(THEME));
    if (!ctx.can('environment:settings:read')) return;
    try {
        const env = (await api('GET', '/environment')).data;
        const ui = env.connect_ui || {};
        if (!localStorage.getItem(THEME) && ui.theme) applyTheme(ui.theme);
        const root = document.documentElement.style;
        if (ui.primary_color_light) root.setProperty('--brand-light', ui.primary_color_light);
        if (ui.primary_color_dark) root.setProperty('--brand-dark', ui.primary_color_dark);
    } catch {
        // Defaults stay.
    }
}

function toggleTheme() {
    const next = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
    localStorage.setItem(THEME, next);
    applyTheme(next);
}

// ---- Shell ------------------------------------------------------------------

const app = document.getElementById('app');
let main;

function shell(active) {
    const who = ctx.key ? `${ctx.key.environment || ''} · ${ctx.key.name || 'key'} …${ctx.key.hint || ''}` : '';
    main = h('main', { id: 'main', tabindex: '-1' });
    // The toast outlives the shell: an action's view reloads right after
    // it shows its outcome.
    const toastEl = document.getElementById('toast') || h('div', { id: 'toast', class: 'toast', role: 'status', hidden: true });
    mount(
        app,
        // Not a route: the link moves the focus, and the address stays.
        h('a', { href: '#main', class: 'skip', onclick: (ev) => { ev.preventDefault(); main.focus(); } }, 'Skip to content'),
        h(
            'header',
            { class: 'topbar' },
            h('span', { class: 'brand' }, 'Connect console'),
            h('nav', { 'aria-label': 'Sections' }, nav.map(([id, path, label]) => link(path, label, { class: id === active ? 'active' : '', 'aria-current': id === active ? 'page' : null }))),
            h('span', { class: 'spacer' }),
            ctx.readOnly ? h('span', { class: 'badge warn', title: 'This key holds no write scope' }, 'read-only') : null,
            h('span', { class: 'who muted' }, who),
            h('button', { class: 'btn ghost', type: 'button', onclick: toggleTheme, 'aria-label': 'Switch between light and dark' }, '◐'),
            link('/logout', 'Sign out', { class: 'btn ghost' })
        ),
        main,
        toastEl
    );
}

function signIn(message) {
    const input = h('input', { type: 'password', name: 'key', autocomplete: 'off', required: true, 'aria-describedby': 'key-help', id: 'key' });
    mount(
        app,
        h(
            'main',
            { class: 'signin' },
            h('h1', {}, 'Connect console'),
            message ? h('div', { class: 'notice bad', role: 'alert' }, message) : null,
            h(
                'form',
                {
                    onsubmit: async (ev) => {
                        ev.preventDefault();
                        session.set(input.value.trim());
                        await start();
                    }
                },
                h('label', { for: 'key' }, 'API key'),
                input,
                h('small', { id: 'key-help', class: 'muted' }, 'The key stays in this tab only (session storage) and decides what the console may do.'),
                h('button', { class: 'btn primary', type: 'submit' }, 'Open the console')
            )
        )
    );
    input.focus();
}

let current = 0;
let lastPath = null;

async function render() {
    const { path, query } = parseHash();
    if (path === '/logout') {
        session.clear();
        ctx.key = null;
        location.hash = '#/';
        signIn();
        return;
    }
    for (const [pattern, view, section] of routes) {
        const params = match(pattern, path);
        if (!params) continue;
        shell(section);
        const token = ++current;
        main.append(h('p', { class: 'loading', role: 'progressbar', 'aria-label': 'Loading' }, 'Loading…'));
        try {
            const nodes = await view(params, query, ctx);
            if (token !== current) return; // another route started meanwhile
            mount(main, nodes);
        } catch (err) {
            if (token !== current) return;
            if (err instanceof ApiError && err.status === 401) {
                session.clear();
                signIn('The API refused the key: ' + err.message);
                return;
            }
            mount(main, errorBox(err));
        }
        document.title = (main.querySelector('h1')?.textContent || 'Console') + ' · Connect console';
        // A new screen starts keyboard users at its content; a reload of
        // the same screen (after an action) leaves focus alone.
        if (lastPath !== null && lastPath !== path) main.focus({ preventScroll: true });
        lastPath = path;
        return;
    }
    shell('');
    mount(main, h('h1', {}, 'Not found'), h('p', {}, 'No screen at this address. '), link('/', 'Back to the overview'));
}

async function start() {
    if (!session.key()) {
        signIn();
        return;
    }
    try {
        ctx.key = (await api('GET', '/environment/key')).data;
    } catch (err) {
        if (err instanceof ApiError && err.status === 401) {
            session.clear();
            signIn('The API refused the key: ' + err.message);
            return;
        }
        // An older server: scopes unknown; every screen still tells 403s.
        ctx.key = { scopes: ['environment:*'], name: 'key' };
    }
    await brand();
    await render();
}

window.addEventListener('hashchange', () => {
    if (session.key()) render();
});
document.addEventListener('keydown', (ev) => {
    // "/" focuses the first search field, as in most consoles.
    if (ev.key === '/' && !/INPUT|TEXTAREA|SELECT/.test(document.activeElement?.tagName || '')) {
        const f = document.querySelector('form.filters input, form.filters select');
        if (f) {
            ev.preventDefault();
            f.focus();
        }
    }
});
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => applyTheme(localStorage.getItem(THEME)));
start();
