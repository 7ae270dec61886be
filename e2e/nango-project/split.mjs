// split.mjs <requests.jsonl> <outdir> <case>: writes the bodies captured by capture.mjs as pretty JSON,
// one file per deploy request (<case>-confirmation.json, <case>-deploy.json, <case>-bundle-preview.json,
// <case>-bundle.json), and the headers of every request in <case>-headers.json.
import fs from 'node:fs';
import path from 'node:path';

const [file, outdir, name] = process.argv.slice(2);
const names = {
    '/sync/deploy/confirmation': 'confirmation',
    '/sync/deploy': 'deploy',
    '/functions/deployments/bundle/preview': 'bundle-preview',
    '/functions/deployments/bundle': 'bundle'
};
const headers = [];
const lines = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
for (const line of lines) {
    const r = JSON.parse(line);
    headers.push({ method: r.method, path: r.path, headers: r.headers });
    const kind = names[r.path];
    if (kind) {
        fs.writeFileSync(path.join(outdir, `${name}-${kind}.json`), JSON.stringify(r.body, null, 2) + '\n');
    } else if (r.body !== null) {
        headers[headers.length - 1].body = r.body;
    }
}
if (headers.length > 0) {
    fs.writeFileSync(path.join(outdir, `${name}-headers.json`), JSON.stringify(headers, null, 2) + '\n');
}
