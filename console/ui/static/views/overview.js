// Overview: counts over time of connections created, refresh failures,
// proxy calls, runs and webhook deliveries, failed ones first, each linked
// to the log entries behind it.
import { api, h, link, route, errorBox } from '../lib.js';

const series = [
    { id: 'refresh', title: 'Refresh failures', match: (c) => c.type === 'auth' && c.operation === 'refresh', kind: 'refresh' },
    { id: 'connections', title: 'Connections created', match: (c) => (c.type === 'connection' && ['create', 'import_create'].includes(c.operation)) || (c.type === 'auth' && c.operation === 'creation'), kind: 'connection' },
    { id: 'proxy', title: 'Proxy calls', match: (c) => c.type === 'proxy', kind: 'proxy' },
    { id: 'runs', title: 'Action and sync runs', match: (c) => ['action', 'sync', 'on-event'].includes(c.type), kind: 'action' },
    { id: 'deliveries', title: 'Webhook delivery attempts', match: (c) => c.type === 'webhook' && c.operation === 'delivery', kind: 'webhook' }
];

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag, attrs, ...children) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    for (const c of children) el.append(c);
    return el;
}

// chart draws stacked bars of successes and failures per bucket.
function chart(points, title) {
    const w = 480;
    const hgt = 90;
    const max = Math.max(1, ...points.map((p) => p.ok + p.bad));
    const bw = w / Math.max(1, points.length);
    const bars = points.flatMap((p, i) => {
        const okH = (p.ok / max) * (hgt - 4);
        const badH = (p.bad / max) * (hgt - 4);
        return [
            svg('rect', { x: i * bw + 1, y: hgt - okH - badH, width: Math.max(1, bw - 2), height: badH, class: 'bar-bad' }, svg('title', {}, `${p.start}: ${p.bad} failed`)),
            svg('rect', { x: i * bw + 1, y: hgt - okH, width: Math.max(1, bw - 2), height: okH, class: 'bar-ok' }, svg('title', {}, `${p.start}: ${p.ok} succeeded`))
        ];
    });
    return svg('svg', { viewBox: `0 0 ${w} ${hgt}`, class: 'chart', role: 'img', 'aria-label': title }, ...bars);
}

export async function render(_params, query) {
    const hours = Number(query.hours) > 0 ? Math.min(Number(query.hours), 24 * 30) : 24;
    const until = new Date();
    const since = new Date(until.getTime() - hours * 3600 * 1000);
    let stats;
    try {
        stats = (await api('GET', '/logs/stats', { query: { since: since.toISOString(), until: until.toISOString(), bucket: hours > 48 ? 'day' : 'hour' } })).data;
    } catch (err) {
        return [h('h1', {}, 'Overview'), errorBox(err)];
    }
    const cards = series.map((s) => {
        const points = (stats.series || []).map((b) => {
            let ok = 0;
            let bad = 0;
            for (const c of b.counts || []) {
                if (!s.match(c)) continue;
                if (c.status === 'failure') bad += c.count;
                else ok += c.count;
            }
            return { start: b.start, ok, bad };
        });
        const ok = points.reduce((a, p) => a + p.ok, 0);
        const bad = points.reduce((a, p) => a + p.bad, 0);
        return { s, points, ok, bad };
    });
    // Failed ones first.
    cards.sort((a, b) => b.bad - a.bad);
    return [
        h(
            'div',
            { class: 'row between' },
            h('h1', {}, 'Overview'),
            h('nav', { class: 'row', 'aria-label': 'Period' }, [24, 24 * 7, 24 * 30].map((n) => link(route('/', { hours: n }), n === 24 ? 'Last day' : n === 168 ? 'Last week' : 'Last month', { class: 'btn ' + (n === hours ? 'primary' : '') })))
        ),
        h(
            'section',
            { class: 'cards overview' },
            cards.map(({ s, points, ok, bad }) =>
                h(
                    'div',
                    { class: 'card', dataset: { series: s.id } },
                    h('h2', {}, s.title),
                    h('p', { class: 'figures' }, h('span', { class: 'big' }, String(ok + bad)), ' ', bad ? link(route('/logs', { kind: s.kind, status: 'failure', since: since.toISOString() }), `${bad} failed`, { class: 'badge bad' }) : h('span', { class: 'badge ok' }, 'none failed')),
                    chart(points, s.title),
                    link(route('/logs', { kind: s.kind, since: since.toISOString() }), 'Open in the log')
                )
            )
        )
    ];
}
