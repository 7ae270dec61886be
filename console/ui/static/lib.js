// Shared pieces of the console: the API client, DOM helpers, formatting
// and small components. No framework: the page stays small and readable.

// ---- API ----------------------------------------------------------------

const KEY = 'connect.console.key';

// The API key lives in the tab's session storage only: never a cookie, never
// local storage, gone when the tab closes.
export const session = {
    key: () => sessionStorage.getItem(KEY) || '',
    set: (k) => sessionStorage.setItem(KEY, k),
    clear: () => sessionStorage.removeItem(KEY)
};

export class ApiError extends Error {
    constructor(status, body) {
        const e = (body && body.error) || {};
        super(e.message || (body && body.message) || `The API answered ${status}.`);
        this.status = status;
        this.code = e.code || '';
        this.errors = e.errors || [];
        this.body = body;
    }
}

// apiBase is the API's base URL: the page's data-api-url, or the parent of
// the console's own address (the console is mounted at <api>/console/).
export function apiBase() {
    const configured = document.body.dataset.apiUrl;
    if (configured) return configured.replace(/\/+$/, '');
    const u = new URL('..', window.location.href);
    return u.href.replace(/\/+$/, '');
}

// api calls the JSON API with the session's key. query is an object whose
// empty values are left out; body is sent as JSON.
export async function api(method, path, { query, body, headers } = {}) {
    const u = new URL(apiBase() + path);
    for (const [k, v] of Object.entries(query || {})) {
        if (v === undefined || v === null || v === '') continue;
        u.searchParams.set(k, String(v));
    }
    const h = { Authorization: `Bearer ${session.key()}`, Accept: 'application/json', ...(headers || {}) };
    const init = { method, headers: h, credentials: 'omit', cache: 'no-store' };
    if (body !== undefined) {
        h['Content-Type'] = 'application/json';
        init.body = JSON.stringify(body);
    }
    const res = await fetch(u, init);
    const text = await res.text();
    let data = null;
    if (text) {
        try {
            data = JSON.parse(text);
        } catch {
            data = { message: text.slice(0, 300) };
        }
    }
    if (!res.ok) throw new ApiError(res.status, data);
    return data;
}

// ---- DOM ------------------------------------------------------------------

// h builds an element: h('a', {href: '#/x', class: 'btn', onclick: fn}, 'text', child).
// Attributes starting with "on" are listeners; null/false attributes and
// children are left out. Text is always text, never HTML.
export function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
        if (v === null || v === undefined || v === false) continue;
        if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
        else if (k === 'class') el.className = v;
        else if (k === 'dataset') Object.assign(el.dataset, v);
        else if (v === true) el.setAttribute(k, '');
        else el.setAttribute(k, String(v));
    }
    append(el, children);
    return el;
}

function append(el, children) {
    for (const c of children.flat(Infinity)) {
        if (c === null || c === undefined || c === false) continue;
        el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
}

// mount replaces the content of el.
export function mount(el, ...children) {
    el.replaceChildren();
    append(el, children);
}

// link is an anchor to a route of the console.
export function link(route, text, attrs = {}) {
    return h('a', { href: '#' + route, ...attrs }, text);
}

// route builds "#/path?query" from a path and an object of query values.
export function route(path, query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query || {})) if (v !== undefined && v !== null && v !== '') q.set(k, v);
    const s = q.toString();
    return path + (s ? '?' + s : '');
}

// ---- Formatting -------------------------------------------------------

export function ago(iso) {
    if (!iso) return '—';
    const t = Date.parse(iso);
    if (Number.isNaN(t)) return iso;
    const s = Math.round((Date.now() - t) / 1000);
    const abs = Math.abs(s);
    const unit = abs < 60 ? [abs, 's'] : abs < 3600 ? [Math.round(abs / 60), 'min'] : abs < 86400 ? [Math.round(abs / 3600), 'h'] : [Math.round(abs / 86400), 'd'];
    return s >= 0 ? `${unit[0]} ${unit[1]} ago` : `in ${unit[0]} ${unit[1]}`;
}

export function time(iso) {
    if (!iso) return h('span', { class: 'muted' }, '—');
    return h('time', { datetime: iso, title: iso }, ago(iso));
}

export function badge(text, kind) {
    return h('span', { class: `badge ${kind || ''}` }, text);
}

export function statusBadge(status) {
    const s = String(status || '').toLowerCase();
    const kind = ['success', 'delivered', 'ok', 'running', 'enabled'].includes(s)
        ? 'ok'
        : ['failure', 'failed', 'error', 'auth_error', 'sync_error'].includes(s)
          ? 'bad'
          : ['paused', 'pending', 'stopped', 'disabled'].includes(s)
            ? 'warn'
            : '';
    return badge(status || '—', kind);
}

// ---- Components -------------------------------------------------------

// table renders rows with columns [{title, cell: (row) => node}].
export function table(columns, rows, { empty = 'Nothing here yet.', rowLink } = {}) {
    if (!rows.length) return h('p', { class: 'empty' }, empty);
    return h(
        'div',
        { class: 'table-wrap' },
        h(
            'table',
            {},
            h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col' }, c.title)))),
            h(
                'tbody',
                {},
                rows.map((r) =>
                    h(
                        'tr',
                        rowLink ? { class: 'linked', onclick: (ev) => { if (!ev.target.closest('a,button')) location.hash = rowLink(r); } } : {},
                        columns.map((c) => h('td', {}, c.cell(r)))
                    )
                )
            )
        )
    );
}

// jsonView shows a value as indented JSON.
export function jsonView(v) {
    return h('pre', { class: 'json', tabindex: '0' }, JSON.stringify(v, null, 2));
}

// errorBox shows an API error; 403 says which scope the key lacks.
export function errorBox(err) {
    if (err instanceof ApiError && err.status === 403) {
        return h('div', { class: 'notice warn', role: 'alert' }, h('strong', {}, 'Not allowed. '), err.message);
    }
    if (err instanceof ApiError && err.status === 401) {
        return h('div', { class: 'notice bad', role: 'alert' }, h('strong', {}, 'The key was refused. '), err.message, ' ', link('/logout', 'Use another key'));
    }
    return h('div', { class: 'notice bad', role: 'alert' }, h('strong', {}, err.code ? `${err.code}: ` : 'Error: '), err.message || String(err));
}

let toastTimer;
// toast shows a short message at the bottom of the page.
export function toast(msg, kind = 'ok') {
    const el = document.getElementById('toast');
    if (!el) return;
    el.className = `toast ${kind}`;
    el.textContent = msg;
    el.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => (el.hidden = true), 4000);
}

// confirmDialog asks before a destructive action; resolves true or false.
export function confirmDialog(message, action = 'Confirm') {
    return new Promise((resolve) => {
        const dlg = h(
            'dialog',
            { class: 'dialog' },
            h('p', {}, message),
            h(
                'form',
                { method: 'dialog', class: 'row end' },
                h('button', { value: 'cancel', class: 'btn' }, 'Cancel'),
                h('button', { value: 'ok', class: 'btn danger', autofocus: true }, action)
            )
        );
        dlg.addEventListener('close', () => {
            resolve(dlg.returnValue === 'ok');
            dlg.remove();
        });
        document.body.append(dlg);
        dlg.showModal();
    });
}

// action runs fn for a button, disabling it meanwhile, and reports the
// outcome as a toast; then calls after (usually a reload of the view).
export async function run(btn, fn, done, after) {
    if (btn) btn.disabled = true;
    try {
        await fn();
        if (done) toast(done);
        if (after) await after();
    } catch (err) {
        toast(err.message || String(err), 'bad');
    } finally {
        if (btn && btn.isConnected) btn.disabled = false;
    }
}

// pager renders "Next" for a cursor list, keeping the rest of the query.
export function pager(path, query, next, { prev } = {}) {
    return h(
        'nav',
        { class: 'pager', 'aria-label': 'Pages' },
        query.cursor ? h('a', { href: '#' + route(path, { ...query, cursor: prev || '' }), class: 'btn' }, 'First page') : null,
        next ? h('a', { href: '#' + route(path, { ...query, cursor: next }), class: 'btn' }, 'Next page') : null
    );
}

// logo shows a provider's logo (the API's logo_url, relative to the API).
export function logo(url, name) {
    if (!url) return h('span', { class: 'logo mono', 'aria-hidden': 'true' }, (name || '?').slice(0, 1).toUpperCase());
    const src = /^https?:/.test(url) ? url : apiBase() + url;
    return h('img', { class: 'logo', src, alt: '', loading: 'lazy', width: '24', height: '24' });
}

// field is a labelled form control.
export function field(label, control, hint) {
    const id = 'f-' + Math.random().toString(36).slice(2, 9);
    control.id = id;
    return h('div', { class: 'field' }, h('label', { for: id }, label), control, hint ? h('small', { class: 'muted' }, hint) : null);
}

// select builds a <select> of [value, label] pairs.
export function select(name, options, value) {
    return h(
        'select',
        { name },
        options.map(([v, l]) => h('option', { value: v, selected: v === (value || '') }, l))
    );
}

// filterForm renders controls that navigate to path with their values as
// the query (the cursor is dropped: a new filter starts at the first page).
export function filterForm(path, query, controls) {
    const form = h(
        'form',
        {
            class: 'filters',
            role: 'search',
            onsubmit: (ev) => {
                ev.preventDefault();
                const q = {};
                for (const [k, v] of new FormData(form).entries()) if (v) q[k] = v;
                location.hash = route(path, q);
            }
        },
        controls,
        h('button', { class: 'btn primary', type: 'submit' }, 'Apply')
    );
    for (const el of form.querySelectorAll('input,select')) {
        if (el.name && query[el.name] !== undefined && el.type !== 'checkbox') el.value = query[el.name];
    }
    return form;
}

export function input(name, attrs = {}) {
    return h('input', { name, type: 'text', autocomplete: 'off', ...attrs });
}
