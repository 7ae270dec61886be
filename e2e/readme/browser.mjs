// Runs one JavaScript example of README.md in headless Chromium for e2e/readme_test.go
// (TestREADME): it opens README_PAGE (a page whose import map resolves @nangohq/frontend to the
// published package), imports README_MODULE there (the example, as an ES module), waits until
// the page and every popup and frame it opened are idle, and writes the module's __readme
// export (the values later examples use) as JSON to README_EXPORTS.
//
// It fails when the module throws, or when anything goes wrong on the way: an uncaught error,
// a Content-Security-Policy violation, a WebSocket that cannot connect, or a request to one of
// the servers under test (README_WATCH, comma-separated origins) that fails or is answered with
// a status of 400 or more.

import { writeFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

const env = (name) => {
    const v = process.env[name];
    if (v === undefined) {
        throw new Error(`${name} must be set (see e2e/readme_test.go)`);
    }
    return v;
};
const watched = env('README_WATCH').split(',').filter(Boolean);
const ours = (url) => watched.some((o) => url.startsWith(o) || url.startsWith(o.replace(/^http/, 'ws')));

const args = ['--disable-dev-shm-usage'];
if (process.getuid?.() === 0) {
    args.push('--no-sandbox');
}
const browser = await chromium.launch({ executablePath: env('README_CHROMIUM'), headless: true, args });
const problems = [];
let found = [];
try {
    const context = await browser.newContext();
    const watch = (p) => {
        p.on('pageerror', (e) => problems.push(`uncaught error in ${p.url()}: ${e.message}`));
        p.on('console', (m) => {
            const text = m.text();
            if (m.type() === 'error' && (/Content Security Policy|Refused to|WebSocket/i.test(text) || watched.some((o) => text.includes(o.replace(/^https?:\/\//, ''))))) {
                problems.push(`console error in ${p.url()}: ${text}`);
            }
        });
    };
    const watchSockets = (p) =>
        p.on('websocket', (ws) => ws.on('socketerror', (e) => problems.push(`WebSocket ${ws.url()}: ${e}`)));
    context.on('page', watch);
    context.on('page', watchSockets);
    context.on('response', (r) => {
        if (r.status() >= 400 && ours(r.url())) {
            problems.push(`${r.request().method()} ${r.url()}: ${r.status()}`);
        }
    });
    context.on('requestfailed', (r) => {
        if (ours(r.url())) {
            problems.push(`${r.method()} ${r.url()} failed: ${r.failure()?.errorText}`);
        }
    });
    const page = await context.newPage();
    await page.goto(env('README_PAGE'));
    let exported;
    try {
        exported = await page.evaluate(async (u) => {
            const m = await import(u);
            return JSON.stringify(m.__readme ?? {});
        }, env('README_MODULE'));
    } catch (e) {
        problems.push(`the example threw: ${e.message}`);
    }
    // Whatever the example started (an iframe, a popup, API calls) runs to its end.
    for (const p of context.pages()) {
        await p.waitForLoadState('networkidle').catch(() => {});
    }
    found = [...problems]; // what closing the browser does afterwards does not count
    if (found.length === 0) {
        writeFileSync(env('README_EXPORTS'), exported ?? '{}');
    }
} catch (e) {
    found = [...problems, e.message];
} finally {
    await browser.close();
}
if (found.length > 0) {
    console.error(found.join('\n'));
    process.exit(1);
}
