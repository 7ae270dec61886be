// The operations console (/console/) in headless Chromium, driven by
// playwright-core, against the reference server with the data that
// e2e/console_test.go (TestConsole) made through the API: a connection
// whose refresh the provider refused, one whose token expired and whose
// refresh fails, the example GitHub issues sync with records, and a
// webhook receiver that answers 500 until it is told to answer 200.
//
//   NANGO_HOST, NANGO_API_KEY   the server and a full-access API key
//   E2E_CHROMIUM                the Chromium executable
//   E2E_CONSOLE                 JSON: the data (see console_test.go)
//   E2E_SCREENSHOT_DIR          where the screenshots go; empty for none
//   E2E_RESULTS                 a JSON file of what the browser did, for the Go side
//
// The steps run in order on one page, as an operator would: sign in and
// move around with the keyboard, find the broken connection and its log
// entry, open the expired one, pause, resume and run the GitHub sync,
// follow the run's webhook delivery from its 500s to its delivery and
// resend it, read the records, look at the integration's functions, make
// a narrow API key and sign in with it, switch the theme, and (with
// E2E_SCREENSHOT_DIR) take the screenshots of docs/. Any uncaught error,
// failed request or console error fails the step it happens in (or the
// next, between steps), but the failures the step expects: the 403s of
// the narrow key and the 400 of the expired connection's refresh.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const env = (name, optional) => {
    const v = process.env[name];
    if (!v && !optional) {
        throw new Error(`${name} must be set (see e2e/console_test.go)`);
    }
    return v || '';
};
const host = env('NANGO_HOST').replace(/\/$/, '');
const apiKey = env('NANGO_API_KEY');
const cfg = JSON.parse(env('E2E_CONSOLE'));
const shots = env('E2E_SCREENSHOT_DIR', true);
const resultsFile = env('E2E_RESULTS');

const TIMEOUT = 20_000; // one page state
const SCRIPT_BUDGET = 200_000; // bytes of the console's modules for the first paint

const broken = cfg.broken;
const stale = cfg.stale;
const gh = cfg.github;
const consoleURL = `${host}/console/`;
const results = {};
// Screens whose state a step made: shot at the end, in both themes.
const later = [];
// When the sync was run from the console: its webhook is newer.
let ranAt = 0;

let browser;
let context;
let page;
// What the current step expects to fail: predicates of (status, url).
let expected = [];
let problems = [];

before(async () => {
    const args = ['--disable-dev-shm-usage'];
    if (process.getuid?.() === 0) {
        args.push('--no-sandbox');
    }
    browser = await chromium.launch({ executablePath: env('E2E_CHROMIUM'), headless: true, args });
    context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
    page = await context.newPage();
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
        if (m.type() !== 'error') {
            return;
        }
        const status = Number(/status of (\d{3})/.exec(m.text())?.[1] || 0);
        if (!status || !isExpected(status, m.location().url)) {
            problems.push(`console error: ${m.text()} (${m.location().url})`);
        }
    });
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
    page.on('response', (r) => {
        if (r.status() >= 400 && !isExpected(r.status(), r.url())) {
            problems.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`);
        }
    });
});

after(async () => {
    writeFileSync(resultsFile, JSON.stringify(results, null, 2));
    await browser?.close();
});

function isExpected(status, url) {
    return expected.some((f) => f(status, url));
}

// step runs fn with the failures it expects, and fails when anything else
// went wrong on the page meanwhile.
async function step(fn, ...expect) {
    expected = expect;
    try {
        await fn();
    } finally {
        expected = [];
    }
    // Since the step before: what happened between steps counts too.
    const seen = problems;
    problems = [];
    assert.deepEqual(seen, [], 'the page had errors');
}

const forbidden = (status, url) => status === 403 && !new URL(url).pathname.startsWith('/console/');

async function apiGet(path, key = apiKey) {
    const res = await fetch(host + path, { headers: { Authorization: `Bearer ${key}` } });
    const body = await res.json();
    assert.equal(res.status, 200, `GET ${path}: ${JSON.stringify(body)}`);
    return body;
}

// ---- Page helpers ----------------------------------------------------------

// The console re-creates its <main> for every screen it renders: a stale
// mark on the current one tells the next apart.
async function markStale() {
    await page.evaluate(() => document.querySelector('main#main')?.setAttribute('data-stale', ''));
}

// rendered waits until a screen other than the marked one has rendered
// (its loading line gone) and returns its <main>.
async function rendered() {
    await page.waitForFunction(
        () => {
            const m = document.querySelector('main#main');
            return m && !m.hasAttribute('data-stale') && !m.querySelector('.loading') && m.childElementCount > 0;
        },
        null,
        { timeout: TIMEOUT }
    );
    return page.locator('main#main');
}

// go shows the screen of a route, as following a link does.
async function go(route) {
    await markStale();
    await page.evaluate((r) => {
        if (location.hash === r) {
            window.dispatchEvent(new HashChangeEvent('hashchange'));
        } else {
            location.hash = r;
        }
    }, '#' + route);
    return rendered();
}

// act clicks a control whose effect renders the screen again.
async function act(locator) {
    await markStale();
    await locator.click();
    return rendered();
}

// until renders the screen of route again until check(main) is true, for
// at most ms.
async function until(route, what, check, ms = TIMEOUT) {
    const deadline = Date.now() + ms;
    for (;;) {
        const main = await go(route);
        if (await check(main)) {
            return main;
        }
        assert.ok(Date.now() < deadline, `${what} within ${ms} ms; the page says: ${(await main.innerText()).slice(0, 1500)}`);
        await page.waitForTimeout(250);
    }
}

async function toast(text) {
    const el = page.locator('#toast');
    await el.filter({ hasText: text }).waitFor({ state: 'visible', timeout: TIMEOUT });
}

async function heading() {
    return (await page.locator('main#main h1').first().innerText({ timeout: TIMEOUT })).trim();
}

async function focused() {
    return page.evaluate(() => {
        const a = document.activeElement;
        return { tag: a?.tagName.toLowerCase(), id: a?.id || '', text: (a?.textContent || '').trim(), href: a?.getAttribute('href') || '' };
    });
}

// tabTo presses Tab until the focused element satisfies want, at most n
// times, and returns the texts of the elements focused on the way.
async function tabTo(want, n = 15) {
    const seen = [];
    for (let i = 0; i < n; i++) {
        await page.keyboard.press('Tab');
        const f = await focused();
        seen.push(f.text || f.id || f.tag);
        if (want(f)) {
            return seen;
        }
    }
    assert.fail(`Tab did not reach the element after ${n} presses: ${JSON.stringify(seen)}`);
}

async function signIn(key) {
    await page.locator('form input#key').waitFor({ timeout: TIMEOUT });
    await page.fill('#key', key);
    await page.press('#key', 'Enter');
    await page.locator('header.topbar').waitFor({ timeout: TIMEOUT });
    return rendered();
}

async function signOut() {
    await page.locator('header.topbar a', { hasText: 'Sign out' }).click();
    await page.locator('form input#key').waitFor({ timeout: TIMEOUT });
    assert.equal(await page.evaluate(() => sessionStorage.getItem('connect.console.key')), null, 'the key stays in session storage after signing out');
}

function screenshotLater(name, route) {
    later.push([name, route]);
}

async function screenshot(name) {
    if (!shots) {
        return;
    }
    // The outcome of the last action fades after 4 s.
    await page.locator('#toast').waitFor({ state: 'hidden', timeout: 10_000 });
    await page.evaluate(() => document.activeElement?.blur());
    const theme = await page.evaluate(() => document.documentElement.dataset.theme);
    await page.screenshot({ path: join(shots, `console-${name}-${theme}.png`) });
}

function connectionRoute(c, tab = '') {
    return `/connections/${encodeURIComponent(c.integration)}/${encodeURIComponent(c.connection)}${tab ? '/' + tab : ''}`;
}

// ---- The steps -------------------------------------------------------------

describe('operations console', () => {
    it('loads less than 200 KB of script, and signs in and navigates with the keyboard', async () => {
        await step(async () => {
            const scripts = [];
            const onResponse = (r) => {
                if (/\/console\/ui\/[^?]+\.js(\?|$)/.test(r.url())) {
                    scripts.push(r.body().then((b) => ({ url: r.url(), bytes: b.length })));
                }
            };
            page.on('response', onResponse);
            await page.goto(consoleURL);
            await page.locator('form input#key').waitFor({ timeout: TIMEOUT });
            page.off('response', onResponse);
            const loaded = await Promise.all(scripts);
            const total = loaded.reduce((n, s) => n + s.bytes, 0);
            results.scriptBytes = total;
            console.log(`first paint: ${loaded.length} modules, ${total} bytes`);
            assert.ok(loaded.length >= 9, `the modules loaded: ${JSON.stringify(loaded)}`);
            assert.ok(total < SCRIPT_BUDGET, `the console's modules weigh ${total} bytes, more than ${SCRIPT_BUDGET}: ${JSON.stringify(loaded)}`);

            // The key field has the focus; Tab goes from it to the button, and
            // Enter on the button signs in.
            assert.equal((await focused()).id, 'key');
            await page.evaluate(() => document.activeElement.blur());
            await tabTo((f) => f.id === 'key');
            await page.keyboard.type(apiKey);
            await tabTo((f) => f.tag === 'button' && f.text === 'Open the console', 2);
            await page.keyboard.press('Enter');
            await page.locator('header.topbar').waitFor({ timeout: TIMEOUT });
            await rendered();
            assert.equal(await page.locator('.topbar .badge', { hasText: 'read-only' }).count(), 0, 'a full key is shown as read-only');

            // The skip link, then the sections in order; Enter follows one.
            await tabTo((f) => f.text === 'Skip to content', 40);
            assert.deepEqual(await tabTo((f) => f.text === 'Connections', 2), ['Overview', 'Connections']);
            await markStale();
            await page.keyboard.press('Enter');
            await rendered();
            assert.equal(await heading(), 'Connections');
            assert.equal(await page.evaluate(() => location.hash), '#/connections');
            // The skip link moves the focus to the content, and stays on the screen.
            await tabTo((f) => f.text === 'Skip to content', 40);
            await page.keyboard.press('Enter');
            assert.equal((await focused()).id, 'main', 'Enter on "Skip to content" does not focus the content');
            assert.equal(await page.evaluate(() => location.hash), '#/connections', 'the skip link changed the address');
            assert.equal(await heading(), 'Connections');
            // A field of the filters, then Logs.
            assert.equal((await tabTo((f) => f.tag === 'input', 3)).length, 1, 'the first filter is not the first control of the content');
            await tabTo((f) => f.text === 'Logs' && f.href === '#/logs', 40);
            await markStale();
            await page.keyboard.press('Enter');
            await rendered();
            assert.equal(await heading(), 'Operations log');
            // "/" focuses the screen's first filter.
            await page.evaluate(() => document.activeElement.blur());
            await page.keyboard.press('/');
            assert.deepEqual(await page.evaluate(() => [document.activeElement.tagName, document.activeElement.name]), ['SELECT', 'kind']);
        });
    });

    it('shows the failed refreshes on the overview, finds the broken connection by its health and follows its error to the log entry', async () => {
        await step(async () => {
            // The overview: the imported connections, and the failed refresh
            // linked to the log's failed refreshes.
            let main = await go('/');
            assert.equal(await heading(), 'Overview');
            const card = (id) => main.locator(`.card[data-series="${id}"]`);
            assert.ok(Number(await card('connections').locator('.big').innerText()) >= cfg.imported, `connections created: ${await card('connections').innerText()}`);
            assert.match(await card('refresh').innerText(), /\d+ failed/);
            main = await act(card('refresh').locator('a.badge.bad'));
            assert.equal(await heading(), 'Operations log');
            const failed = await main.locator('tbody tr').allInnerTexts();
            assert.ok(failed.length >= 1 && failed.every((r) => /auth · refresh\s+failure/.test(r)), `the failed refreshes: ${failed}`);
            assert.ok(failed.some((r) => r.includes(broken.connection)), `the failed refreshes: ${failed}`);

            main = await go('/connections');
            const form = main.locator('form.filters');
            await form.locator('select[name="status"]').selectOption('auth_error');
            main = await act(form.locator('button[type="submit"]'));
            assert.equal(await page.evaluate(() => location.hash), '#/connections?status=auth_error');
            const rows = main.locator('tbody tr');
            const ids = await rows.evaluateAll((trs) => trs.map((tr) => tr.cells[0].innerText.trim()));
            assert.ok(ids.includes(broken.connection), `the filtered list: ${ids}`);
            for (const text of await rows.allInnerTexts()) {
                assert.match(text, /auth_error/, 'a healthy connection passed the Health filter');
            }
            const row = rows.filter({ hasText: broken.connection });
            assert.match(await row.innerText(), /auth_error/);
            main = await act(row.getByRole('link', { name: broken.connection, exact: true }));

            assert.match(await heading(), new RegExp(`${broken.connection}\\s+auth_error`));
            const creds = main.locator('.card', { has: page.locator('h2', { hasText: 'Credentials' }) });
            assert.match(await creds.innerText(), /Auth mode\s+OAUTH2/);
            assert.match(await creds.innerText(), /Refresh\s+failure last failed .* \(1 failed attempts\)/);
            const errLink = main.getByRole('link', { name: 'Open its log entry' });
            assert.equal(await errLink.getAttribute('href'), `#/logs/${broken.logId}`);
            // A full key may edit and refresh.
            for (const name of ['Refresh now', 'Save tags', 'Save metadata', 'Delete connection']) {
                assert.equal(await main.getByRole('button', { name }).count(), 1, `no ${name} button for a full key`);
            }

            main = await act(errLink);
            assert.match(await heading(), /^auth · refresh\s+failure$/);
            assert.match(await main.locator('.lead').innerText(), /refreshing the access token failed: HTTP 400: invalid_grant: The refresh token was revoked by the user\./);
            assert.equal(await main.locator('dd code').first().innerText(), broken.logId);
            const details = JSON.parse(await main.locator('pre.json').innerText());
            assert.equal(details.error, 'invalid_grant');
            assert.equal(details.status, 400);
            assert.equal(details.forced, true);
            assert.equal((await main.getByRole('link', { name: broken.connection }).getAttribute('href')), `#${connectionRoute(broken)}`);
        });
    });

    it('shows a connection whose token expired and whose refresh fails', async () => {
        // Reading the connection refreshes its token, which the provider
        // refuses: that read answers 400, and the page shows the connection
        // from the list with the refresh's error.
        await step(
            async () => {
                const main = await go(connectionRoute(stale));
                assert.match(await heading(), new RegExp(`${stale.connection}\\s+auth_error`));
                const creds = main.locator('.card', { has: page.locator('h2', { hasText: 'Credentials' }) });
                assert.match(await creds.locator('[role="alert"]').innerText(), /Refreshing the access token failed/);
                assert.match(await creds.innerText(), /Refresh\s+failure/);
                assert.equal(await main.getByRole('link', { name: 'Open its log entry' }).count(), 1);
                assert.match(await main.locator('.card', { hasText: 'End user' }).innerText(), /Wile E\. Coyote/);
            },
            (status, url) => status === 400 && new URL(url).pathname === `/connections/${stale.connection}`
        );
    });

    it("pauses, resumes and runs the connection's sync", async () => {
        await step(async () => {
            let main = await go(connectionRoute(gh));
            main = await act(main.locator('nav.tabs').getByRole('link', { name: 'Syncs' }));
            assert.equal(await heading(), `${gh.connection} · syncs`);
            const row = () => page.locator('main#main tbody tr', { hasText: gh.sync });
            const cell = async (i) => (await row().locator('td').nth(i).innerText()).trim();
            assert.equal(await cell(1), 'SUCCESS');
            assert.match(await cell(5), new RegExp(`${gh.model}: \\d+`));

            const lastRun = () => row().locator('td').nth(2).locator('time').getAttribute('datetime');
            const newRun = (after, what) =>
                until(connectionRoute(gh, 'syncs'), what, async () => (await lastRun()) !== after && (await cell(1)) === 'SUCCESS');
            const before = await lastRun();

            await act(row().getByRole('button', { name: 'Pause' }));
            await toast('Paused.');
            assert.equal(await cell(1), 'PAUSED');
            assert.equal(await row().getByRole('button', { name: 'Pause' }).count(), 0);

            // A resumed sync runs at once, then on its schedule.
            await act(row().getByRole('button', { name: 'Resume' }));
            await toast('Resumed.');
            assert.notEqual(await cell(1), 'PAUSED');
            await newRun(before, 'no run of the resumed sync');

            const resumed = await lastRun();
            const runsBefore = (await apiGet(`/logs/operations?type=sync&integration=${gh.integration}&connection_id=${gh.connection}&limit=100`)).data.length;
            ranAt = Date.now();
            await act(row().getByRole('button', { name: 'Run' }));
            await toast('Run requested.');
            // A new run: its end is the sync's last run, and the log has it.
            main = await newRun(resumed, 'no new run of the sync');
            assert.match(await row().locator('td').nth(2).innerText(), /ago\s+success/);
            const runs = (await apiGet(`/logs/operations?type=sync&integration=${gh.integration}&connection_id=${gh.connection}&limit=100`)).data;
            assert.ok(runs.length > runsBefore, `the log has ${runs.length} sync entries, as many as before the run`);
            screenshotLater('syncs', connectionRoute(gh, 'syncs'));
        });
    });

    it('follows the failing webhook delivery of the run, recovers it and resends it', async () => {
        await step(async () => {
            // The run's webhook, once the server has queued it.
            let newest;
            for (const deadline = Date.now() + TIMEOUT; ; ) {
                newest = (await apiGet(`/webhooks/deliveries?type=sync&integration_id=${gh.integration}&connection_id=${gh.connection}&limit=1`)).data[0];
                if (newest && Date.parse(newest.created_at) >= ranAt) {
                    break;
                }
                assert.ok(Date.now() < deadline, `no sync webhook since the run: ${JSON.stringify(newest)}`);
                await page.waitForTimeout(100);
            }
            let main = await go('/connections');
            main = await act(page.locator('header nav').getByRole('link', { name: 'Webhook deliveries' }));
            assert.equal(await heading(), 'Webhook deliveries');
            // The server retries fast only (CONNECT_WEBHOOK_RETRY_SCHEDULE=none):
            // the delivery the receiver refuses is failed within a second.
            const route = `/deliveries/${newest.id}`;
            await until(route, 'the run\'s delivery failed', async () => /failed$/.test(await heading()));
            main = await go('/deliveries');
            const form = main.locator('form.filters');
            await form.locator('select[name="status"]').selectOption('failed');
            await form.locator('select[name="type"]').selectOption('sync');
            await form.locator('input[name="integration"]').fill(gh.integration);
            await form.locator('input[name="connection"]').fill(gh.connection);
            main = await act(form.locator('button[type="submit"]'));
            assert.equal(await page.evaluate(() => location.hash), `#/deliveries?status=failed&type=sync&integration=${gh.integration}&connection=${gh.connection}`);
            const rows = main.locator('tbody tr');
            assert.ok((await rows.count()) >= 1);
            for (const text of await rows.allInnerTexts()) {
                assert.match(text, /\bsync\b.*failed/s);
            }
            const row = rows.filter({ has: page.locator(`a[href="#/deliveries/${newest.id}"]`) });
            assert.equal(await row.count(), 1, `the run's delivery ${newest.id} is not listed`);
            main = await act(row.getByRole('link', { name: 'Open' }));
            assert.match(await heading(), /^sync webhook\s+failed$/);
            assert.equal(await main.locator('dd code').first().innerText(), cfg.hookUrl);

            // The timeline: the receiver's 500s (the first attempt and its fast retries).
            const refused = main.locator('ol.timeline li', { hasText: 'HTTP 500' });
            assert.equal(await refused.count(), 3);
            const first = main.locator('ol.timeline li').first();
            assert.match(await first.innerText(), /Attempt 1\s+failure\s+HTTP 500/);
            assert.match(await first.innerText(), /the receiver is down for maintenance/);

            // The receiver recovers; the failed delivery is resent and delivered.
            const res = await fetch(cfg.receiver, { method: 'POST', body: '200' });
            assert.equal(res.status, 204);
            await act(main.getByRole('button', { name: 'Resend' }));
            await toast('Sent again.');
            main = await until(route, 'the resent delivery delivered', async (m) => /delivered$/.test(await heading()) && (await m.locator('ol.timeline li', { hasText: 'HTTP 200' }).count()) === 1);
            assert.equal(await main.locator('ol.timeline li').count(), 4);
            // In time order, the resend's attempt last (it is numbered 1 again).
            const times = await main.locator('ol.timeline li time').evaluateAll((ts) => ts.map((x) => Date.parse(x.getAttribute('datetime'))));
            assert.deepEqual(times, times.toSorted((a, b) => a - b), 'the attempts are not in time order');
            assert.match(await main.locator('ol.timeline li').last().innerText(), /^Attempt 1\s+success\s+HTTP 200/);

            // The other failed deliveries (the receiver refused them too), resent as a set.
            main = await go('/deliveries?status=failed');
            if ((await main.locator('tbody tr').count()) > 0) {
                await main.getByRole('button', { name: 'Resend the failed ones that match' }).click();
                await page.locator('dialog').getByRole('button', { name: 'Resend' }).click();
                await toast('sent again.');
                await until('/deliveries?status=failed', 'no failed delivery left', async (m) => (await m.locator('tbody tr').count()) === 0);
            }
            results.resentDelivery = newest.id;
            screenshotLater('deliveries', route);
        });
    });

    it("lists the connection's records and shows one as JSON", async () => {
        await step(async () => {
            let main = await go(connectionRoute(gh));
            main = await act(main.locator('nav.tabs').getByRole('link', { name: 'Records' }));
            const row = main.locator('tbody tr', { hasText: gh.model });
            const count = Number((await row.locator('td').nth(1).innerText()).trim());
            assert.ok(count > 50, `${gh.model}: ${count} records`);
            main = await act(row.getByRole('link', { name: gh.model }));
            assert.equal(await heading(), gh.model);
            const items = main.locator('ol.records > li');
            assert.equal(await items.count(), 50);
            assert.equal(await main.getByRole('link', { name: 'Next page' }).count(), 1);
            const first = items.first();
            const json = first.locator('pre.json');
            assert.equal(await json.isVisible(), false);
            await first.locator('summary').click();
            await json.waitFor({ state: 'visible', timeout: TIMEOUT });
            const rec = JSON.parse(await json.innerText());
            assert.equal(rec.id, (await first.locator('summary code').innerText()).trim());
            assert.equal(typeof rec.title, 'string');
            assert.match(rec._nango_metadata.last_action, /^(ADDED|UPDATED)$/);
        });
    });

    it("lists the integrations and shows one's functions and code", async () => {
        await step(async () => {
            let main = await act(page.locator('header nav').getByRole('link', { name: 'Integrations' }));
            assert.equal(await heading(), 'Integrations');
            const keys = await main.locator('tbody tr td:nth-child(2)').allInnerTexts();
            assert.deepEqual(keys.map((k) => k.trim()).sort(), [broken.integration, gh.integration, cfg.slack].sort());
            main = await act(main.getByRole('link', { name: gh.integration, exact: true }));
            assert.match(await heading(), new RegExp(`GitHub issues\\s+${gh.integration}`));
            const fns = main.locator('tbody tr');
            assert.deepEqual((await fns.locator('td:first-child').allInnerTexts()).sort(), ['create-issue', gh.sync]);
            const action = fns.filter({ hasText: 'create-issue' });
            assert.match(await action.innerText(), /action\s+1\s+go\s+.*enabled/s);
            // Disable the action, then enable it again.
            main = await act(action.getByRole('button', { name: 'Disable' }));
            await toast('Disabled.');
            assert.match(await fns.filter({ hasText: 'create-issue' }).innerText(), /disabled\s+Enable/);
            main = await act(fns.filter({ hasText: 'create-issue' }).getByRole('button', { name: 'Enable' }));
            await toast('Enabled.');
            assert.match(await fns.filter({ hasText: 'create-issue' }).innerText(), /enabled\s+Disable/);
            main = await act(fns.filter({ hasText: gh.sync }).getByRole('link', { name: gh.sync }));
            assert.match(await heading(), new RegExp(`^${gh.sync}\\s+enabled$`));
            assert.match(await main.locator('pre.code').innerText(), /written in Go/);
            assert.ok(JSON.parse(await main.locator('pre.json').innerText()).$defs[gh.model]);
        });
    });

    it('creates a read-only API key, and signs in with it', async () => {
        let narrowKey;
        await step(async () => {
            const main = await act(page.locator('header nav').getByRole('link', { name: 'Settings' }));
            assert.match(await heading(), /^Settings/);
            const keys = main.locator('section.card', { has: page.locator('h2', { hasText: 'API keys' }) });
            await keys.locator('input[name="name"]').fill('read-only console');
            for (const scope of ['environment:connections:read', 'environment:logs:read']) {
                await keys.locator(`input[name="scope"][value="${scope}"]`).check();
            }
            await keys.getByRole('button', { name: 'Create key' }).click();
            const shown = keys.locator('.secret-once');
            await shown.waitFor({ timeout: TIMEOUT });
            await toast('Key created.');
            narrowKey = (await shown.innerText()).trim();
            assert.ok(narrowKey.length >= 16, `the key shown: ${narrowKey}`);
            results.narrowKeyHint = narrowKey.slice(-4);
            const me = await apiGet('/environment/key', narrowKey);
            assert.deepEqual(me.data.scopes.toSorted(), ['environment:connections:read', 'environment:logs:read']);
            screenshotLater('settings', '/settings');
            await signOut();
        });

        // The narrow key: the sections it may not read say so (403).
        await step(
            async () => {
                await signIn(narrowKey);
                assert.equal(await page.locator('.topbar .badge', { hasText: 'read-only' }).count(), 1, 'no read-only badge');
                assert.match(await page.locator('.topbar .who').innerText(), new RegExp(`read-only console …${results.narrowKeyHint}`));

                let main = await go('/settings');
                const keys = main.locator('section.card', { has: page.locator('h2', { hasText: 'API keys' }) });
                assert.match(await keys.locator('[role="alert"]').innerText(), /^Not allowed\./);
                assert.equal(await keys.getByRole('button').count(), 0);
                assert.equal(await main.getByRole('button').count(), 0, 'Settings has buttons for a read-only key');

                main = await go(connectionRoute(broken));
                assert.match(await heading(), new RegExp(`${broken.connection}\\s+auth_error`));
                assert.equal(await main.getByRole('button').count(), 0, `the connection page has buttons for a read-only key: ${await main.getByRole('button').allInnerTexts()}`);
                for (const name of ['tags', 'metadata']) {
                    assert.equal(await main.locator(`textarea[name="${name}"]`).getAttribute('readonly'), '');
                }
                // Its error's log entry is readable.
                main = await act(main.getByRole('link', { name: 'Open its log entry' }));
                assert.match(await heading(), /^auth · refresh/);
                await signOut();
            },
            forbidden
        );
    });

    it('switches between light and dark, and keeps the choice', async () => {
        await step(async () => {
            await signIn(apiKey);
            const theme = () => page.evaluate(() => [document.documentElement.dataset.theme, localStorage.getItem('connect.console.theme')]);
            assert.deepEqual(await theme(), ['light', null]);
            const toggle = page.getByRole('button', { name: 'Switch between light and dark' });
            await toggle.click();
            assert.deepEqual(await theme(), ['dark', 'dark']);
            const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
            await page.reload();
            await page.locator('header.topbar').waitFor({ timeout: TIMEOUT });
            assert.deepEqual(await theme(), ['dark', 'dark']);
            assert.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), bg);
            await toggle.click();
            assert.deepEqual(await theme(), ['light', 'light']);
        });
    });

    it('takes the screenshots', { skip: !shots && 'E2E_SCREENSHOT_DIR is empty' }, async () => {
        await step(async () => {
            const screens = [
                ['overview', '/'],
                ['connections', '/connections'],
                ['connection', connectionRoute(broken)],
                ...later,
                ['logs', '/logs'],
                ['integrations', '/integrations']
            ];
            for (const want of ['light', 'dark']) {
                if ((await page.evaluate(() => document.documentElement.dataset.theme)) !== want) {
                    await page.getByRole('button', { name: 'Switch between light and dark' }).click();
                }
                for (const [name, route] of screens) {
                    await go(route);
                    assert.equal(await page.locator('main#main [role="alert"]').count(), 0, `${name}: ${await page.locator('main#main').innerText()}`);
                    if (name === 'deliveries') {
                        // The end of the timeline: the recovery and the resend.
                        await page.evaluate(() => {
                            document.querySelector('ol.timeline li:last-child').scrollIntoView({ block: 'end' });
                            window.scrollBy(0, 24);
                        });
                    }
                    await screenshot(name);
                }
            }
        });
    });
});
