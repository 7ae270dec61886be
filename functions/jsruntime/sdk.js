// The nango object of a run, as Nango's runner gives it to a function,
// over one host function (__connect_host: an operation name and its
// arguments as JSON in, {"v": value} or {"e": error} as JSON out). It runs
// once per Box, before the function's module, and leaves on the global
// object only __connect_start.
(() => {
	'use strict';
	const host = globalThis.__connect_host;
	delete globalThis.__connect_host;

	// Errors a Go operation answers: a provider's answer outside 2xx
	// (Axios-shaped, as user code reads it), or a Go error kept on the host
	// side under ref, which the classifier gets back when the function lets
	// it escape.
	const hidden = (obj, name, value) => Object.defineProperty(obj, name, { value, enumerable: false, writable: false, configurable: false });

	class ActionError extends Error {
		constructor(payload) {
			super();
			this.type = 'action_script_runtime_error';
			if (payload) {
				this.payload = payload;
				if (payload && typeof payload === 'object' && typeof payload.message === 'string') this.message = payload.message;
			}
		}
	}
	Object.defineProperty(ActionError.prototype, 'name', { value: 'ActionError', enumerable: false });

	const decodeBody = (r, responseType) => {
		if (r.b64 !== undefined) {
			const buf = Buffer.from(r.b64, 'base64');
			if (responseType === 'arraybuffer' || responseType === 'stream' || responseType === 'blob') return buf;
			const text = buf.toString('utf8');
			return text;
		}
		const text = r.body === undefined ? '' : r.body;
		if (responseType === 'arraybuffer' || responseType === 'stream' || responseType === 'blob') return Buffer.from(text, 'utf8');
		if (responseType === 'text') return text;
		if (text === '') return text;
		try { return JSON.parse(text); } catch (e) { return text; }
	};

	const axiosResponse = (r, config) => ({
		data: decodeBody(r, config && config.responseType),
		status: r.status,
		statusText: r.statusText || '',
		headers: r.headers || {},
		config: config || {},
		request: { path: r.path || '' },
	});

	const toError = (e, config) => {
		if (e.kind === 'http') {
			const response = axiosResponse(e, config);
			const err = new Error('Request failed with status code ' + e.status);
			err.name = 'AxiosError';
			err.isAxiosError = true;
			err.code = e.status >= 500 ? 'ERR_BAD_RESPONSE' : 'ERR_BAD_REQUEST';
			err.status = e.status;
			err.response = response;
			err.config = config || {};
			err.toJSON = function () { return { message: this.message, name: this.name, code: this.code, status: this.status }; };
			hidden(err, '__connect_ref', e.ref);
			return err;
		}
		const err = new Error(e.message || 'the operation failed');
		if (e.name) err.name = e.name;
		if (e.code) err.code = e.code;
		if (e.ref) hidden(err, '__connect_ref', e.ref);
		return err;
	};

	const call = (op, args, config) => {
		const r = JSON.parse(host(op + '\n' + JSON.stringify(args === undefined ? null : args)));
		if (r.e) throw toError(r.e, config);
		return r.v;
	};

	const plain = (v) => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

	const proxyArgs = (config) => {
		if (!config || typeof config !== 'object') throw new TypeError('nango.proxy: a configuration object is required');
		const args = {
			endpoint: config.endpoint,
			method: config.method,
			headers: config.headers,
			params: config.params,
			retries: config.retries,
			retryOn: config.retryOn,
			baseUrlOverride: config.baseUrlOverride,
			decompress: config.decompress,
			providerConfigKey: config.providerConfigKey,
			connectionId: config.connectionId,
			responseType: config.responseType,
		};
		const data = config.data;
		if (data !== undefined && data !== null) {
			if (typeof data === 'string') args.text = data;
			// A Buffer is a Uint8Array; neither check loads Buffer or URL
			// into the Box (jsbox loads them when first used), as axios's
			// own check of URLSearchParams reads only the tag.
			else if (data instanceof Uint8Array) args.b64 = Buffer.from(data).toString('base64');
			else if (Object.prototype.toString.call(data) === '[object URLSearchParams]') args.form = data.toString();
			else args.data = plain(data);
		}
		return args;
	};

	const props = (p, s) => {
		const n = {};
		for (const k of Object.keys(p)) n[k] = p[k];
		return n;
	};

	const makeNango = (spec) => {
		const p = spec.props;
		let loggerLevel = p.loggerLevel || 'info';
		const levels = { debug: 0, info: 1, warn: 2, error: 3, off: 4 };
		const locks = new Set();
		const memo = new Map();
		const nango = {
			connectionId: p.connectionId,
			providerConfigKey: p.providerConfigKey,
			provider: p.provider,
			environmentId: p.environmentId,
			environmentName: p.environmentName,
			activityLogId: p.activityLogId,
			nangoConnectionId: p.nangoConnectionId,
			scriptType: p.scriptType,
			syncConfig: p.syncConfig,
			runnerFlags: {},
			isCLI: false,
			ActionError,
			get logger() { return { level: loggerLevel }; },

			async proxy(config) {
				const args = proxyArgs(config);
				return axiosResponse(call('proxy', args, config), config);
			},
			async get(config) { return nango.proxy({ ...config, method: 'GET' }); },
			async post(config) { return nango.proxy({ ...config, method: 'POST' }); },
			async put(config) { return nango.proxy({ ...config, method: 'PUT' }); },
			async patch(config) { return nango.proxy({ ...config, method: 'PATCH' }); },
			async delete(config) { return nango.proxy({ ...config, method: 'DELETE' }); },

			async *paginate(config) {
				if (!config || typeof config !== 'object') throw new TypeError('nango.paginate: a configuration object is required');
				const args = proxyArgs(config);
				const pg = config.paginate ? { ...config.paginate } : undefined;
				const onPage = pg && typeof pg.on_page === 'function' ? pg.on_page : undefined;
				if (pg) delete pg.on_page;
				args.paginate = pg;
				args.withResponse = !!onPage;
				const id = call('paginate.start', args, config);
				try {
					for (;;) {
						const page = call('paginate.next', id, config);
						if (page === null) return;
						// As Nango's paginate: the page first, then on_page
						// (after the caller is done with the page).
						yield page.records;
						if (onPage) await onPage({ nextPageParam: page.next === null ? undefined : page.next, response: axiosResponse(page.response, config) });
					}
				} finally {
					call('paginate.stop', id);
				}
			},

			async getToken() { return call('getToken', null); },
			getVariant() { return p.variant || 'base'; },
			async getIntegration(queries) {
				const include = queries && Array.isArray(queries.include) ? queries.include : [];
				return call('getIntegration', { include });
			},
			async getConnection(providerConfigKeyOverride, connectionIdOverride, options) {
				const key = (providerConfigKeyOverride || '') + '\u0000' + (connectionIdOverride || '');
				const refresh = !!(options && (options.forceRefresh || options.refreshToken || options.refreshGithubAppJwtToken));
				const cached = memo.get(key);
				if (!refresh && cached && Date.now() - cached.at < 60000) return cached.connection;
				const connection = call('getConnection', {
					providerConfigKey: providerConfigKeyOverride || '', connectionId: connectionIdOverride || '',
					forceRefresh: !!(options && options.forceRefresh), refreshToken: !!(options && options.refreshToken),
				});
				memo.set(key, { connection, at: Date.now() });
				return connection;
			},
			async setMetadata(metadata) {
				try { return call('setMetadata', plain(metadata)); } finally { memo.clear(); }
			},
			async updateMetadata(metadata) {
				try { return call('updateMetadata', plain(metadata)); } finally { memo.clear(); }
			},
			async getMetadata() { return (await nango.getConnection()).metadata; },
			async setFieldMapping(m) { return nango.setMetadata(m); },
			async getFieldMapping() { const m = (await nango.getMetadata()) || {}; return m.fieldMapping || {}; },
			async getWebhookURL() { return (await nango.getIntegration({ include: ['webhook'] })).webhook_url; },
			setLogger(logger) { if (loggerLevel === 'off') return; if (logger && logger.level in levels) loggerLevel = logger.level; },
			async getEnvironmentVariables() { return call('getEnvironmentVariables', null); },
			getFlowAttributes() {
				if (p.scriptType !== 'sync' && p.scriptType !== 'webhook') throw new Error('There is no current sync to get attributes from');
				return p.attributes || {};
			},
			async log(...args) {
				let level = 'info';
				const last = args[args.length - 1];
				if (args.length > 1 && last && typeof last === 'object' && !Array.isArray(last) && Object.keys(last).length === 1 && 'level' in last) {
					level = String(last.level);
					args.pop();
				}
				if (level === 'verbose' || level === 'silly') level = 'debug';
				if (level === 'http') level = 'info';
				if (!(level in levels) || level === 'off') level = 'info';
				if (levels[level] < levels[loggerLevel]) return;
				const [msg, ...rest] = args;
				let meta = null;
				if (rest.length === 1 && rest[0] && typeof rest[0] === 'object' && !(rest[0] instanceof Error)) meta = rest[0];
				else if (rest.length > 0) meta = { args: rest.map((a) => (a instanceof Error ? String(a) : a)) };
				const text = typeof msg === 'string' ? msg : msg instanceof Error ? String(msg) : (() => { try { return JSON.stringify(msg); } catch (e) { return String(msg); } })();
				let m = null;
				if (meta) { try { m = JSON.parse(JSON.stringify(meta)); } catch (e) { m = { meta: String(meta) }; } }
				call('log', { level, message: text === undefined ? 'undefined' : text, meta: m });
			},
			async triggerAction(providerConfigKey, connectionId, actionName, input) {
				return call('triggerAction', { providerConfigKey, connectionId, actionName, input: plain(input) });
			},
			async triggerSync(providerConfigKey, connectionId, sync, syncMode) {
				const ref = typeof sync === 'string' ? { name: sync, variant: '' } : { name: sync.name, variant: sync.variant || '' };
				const full = syncMode === true || syncMode === 'full_refresh' || syncMode === 'full_refresh_and_clear_cache';
				call('triggerSync', { providerConfigKey, connectionId, name: ref.name, variant: ref.variant, reset: full, emptyCache: syncMode === 'full_refresh_and_clear_cache' });
			},
			async startSync(providerConfigKey, syncs, connectionId) {
				const refs = (syncs || []).map((s) => (typeof s === 'string' ? { name: s, variant: '' } : { name: s.name, variant: s.variant || '' }));
				call('startSync', { providerConfigKey, connectionId: connectionId || '', syncs: refs });
			},
			async zodValidateInput({ zodSchema, input }) {
				const parsed = zodSchema.safeParse(input);
				if (!parsed.success) {
					for (const issue of parsed.error.issues) {
						await nango.log(`Invalid input provided: ${issue.message} at path ${issue.path.join('.')}`, { level: 'error' });
					}
					throw new ActionError({ message: 'Invalid input provided' });
				}
				return parsed;
			},
			async getCheckpoint() { return call('getCheckpoint', null); },
			async saveCheckpoint(checkpoint) { call('saveCheckpoint', plain(checkpoint)); },
			async clearCheckpoint() { call('clearCheckpoint', null); },
			async tryAcquireLock({ key, ttlMs }) {
				const ok = call('lock.acquire', { key: String(key), ttlMs: Number(ttlMs) || 0 });
				if (ok) locks.add(String(key));
				return ok;
			},
			async releaseLock({ key }) {
				locks.delete(String(key));
				return call('lock.release', { key: String(key) });
			},
			async releaseAllLocks() {
				for (const key of locks) call('lock.release', { key });
				locks.clear();
			},
			async uncontrolledFetch(options) {
				const r = call('fetch', { url: options && String(options.url), method: options && options.method, headers: options && options.headers,
					body: options && options.body !== undefined && options.body !== null ? String(options.body) : undefined });
				return makeResponse(r);
			},
		};

		if (p.scriptType === 'sync' || p.scriptType === 'webhook') {
			Object.assign(nango, {
				variant: p.variant || 'base',
				lastSyncDate: p.lastSyncDate ? new Date(p.lastSyncDate) : undefined,
				track_deletes: !!p.trackDeletes,
				emptyCache: !!p.emptyCache,
				syncId: p.syncId,
				syncJobId: p.syncJobId,
				async batchSave(records, model) { return batch('batchSave', records, model); },
				async batchSend(records, model) { return batch('batchSave', records, model); },
				async batchUpdate(records, model) { return batch('batchUpdate', records, model); },
				async batchDelete(records, model) { return batch('batchDelete', records, model); },
				async getRecordsByIds(ids, model) {
					const found = call('getRecordsByIds', { ids: (ids || []).map(String), model: String(model) });
					const out = new Map();
					for (const id of ids || []) {
						if (Object.prototype.hasOwnProperty.call(found, String(id))) out.set(id, found[String(id)]);
					}
					return out;
				},
				async *listRecords(model, options) {
					let cursor = options && options.cursor ? String(options.cursor) : '';
					for (;;) {
						const page = call('listRecords', { model: String(model), cursor });
						for (const r of page.records) yield r;
						if (!page.next) return;
						cursor = page.next;
					}
				},
				async trackDeletesStart(model) { call('trackDeletesStart', { model: String(model) }); },
				async trackDeletesEnd(model) { return call('trackDeletesEnd', { model: String(model) }); },
				async deleteRecordsFromPreviousExecutions(model) { return call('trackDeletesEnd', { model: String(model), implicit: true }); },
				async setMergingStrategy(merging, model) { call('setMergingStrategy', { strategy: merging && merging.strategy, model: String(model) }); },
			});
		}
		return Object.freeze(nango);
	};

	const batch = (op, records, model) => {
		if (!Array.isArray(records)) throw new TypeError(op + ': records must be an array');
		if (records.length === 0) return true;
		const clean = records.map((r) => {
			if (r && typeof r === 'object' && '_nango_metadata' in r) {
				const c = { ...r };
				delete c._nango_metadata;
				return c;
			}
			return r;
		});
		for (let i = 0; i < clean.length; i += 1000) {
			call(op, { model: String(model), records: i === 0 && clean.length <= 1000 ? clean : clean.slice(i, i + 1000) });
		}
		return true;
	};

	const makeResponse = (r) => {
		const headers = r.headers || {};
		const body = r.b64 !== undefined ? Buffer.from(r.b64, 'base64') : Buffer.from(r.body || '', 'utf8');
		return Object.freeze({
			status: r.status, statusText: r.statusText || '', ok: r.status >= 200 && r.status < 300, url: r.url || '', redirected: !!r.redirected,
			headers: Object.freeze({ get: (k) => { const v = headers[String(k).toLowerCase()]; return v === undefined ? null : v; }, has: (k) => String(k).toLowerCase() in headers, entries: () => Object.entries(headers)[Symbol.iterator](), forEach: (fn) => { for (const [k, v] of Object.entries(headers)) fn(v, k); } }),
			async text() { return body.toString('utf8'); },
			async json() { return JSON.parse(body.toString('utf8')); },
			async arrayBuffer() { return body.buffer.slice(body.byteOffset, body.byteOffset + body.length); },
		});
	};

	// describe turns what a function threw into what the host classifies.
	const describe = (e) => {
		// The engine throws null when it is out of memory.
		if (e === null) return { kind: 'null' };
		try {
			if (e instanceof ActionError || (e && typeof e === 'object' && e.type === 'action_script_runtime_error')) {
				let payload = e.payload;
				try { payload = payload === undefined ? undefined : JSON.parse(JSON.stringify(payload)); } catch (x) { payload = { message: String(payload) }; }
				return { kind: 'action', payload, stack: e.stack ? String(e.stack) : '' };
			}
			if (e && typeof e === 'object' && e.__connect_ref) return { kind: 'ref', ref: e.__connect_ref, stack: e.stack ? String(e.stack) : '' };
			if (e && typeof e === 'object' && e.isAxiosError && e.response) {
				const r = e.response;
				let data = r.data;
				if (data instanceof Uint8Array && Buffer.isBuffer(data)) data = data.toString('utf8');
				try { data = JSON.parse(JSON.stringify(data === undefined ? null : data)); } catch (x) { data = String(data); }
				return { kind: 'http', status: Number(r.status) || 0, headers: r.headers || {}, data };
			}
			if (e instanceof Error) return { kind: 'internal', name: String(e.name || 'Error'), message: String(e.message || ''), code: e.code === undefined ? undefined : String(e.code), stack: e.stack ? String(e.stack) : '' };
			let text;
			try { text = typeof e === 'string' ? e : JSON.stringify(e); } catch (x) { text = String(e); }
			return { kind: 'internal', name: 'Error', message: String(text), stack: '' };
		} catch (x) {
			return { kind: 'internal', name: 'Error', message: 'the function threw a value that cannot be described', stack: '' };
		}
	};

	// __connect_start runs the function the spec names and answers a
	// promise of its outcome, as JSON: {ok, value} or {ok: false, error}.
	// It never rejects.
	Object.defineProperty(globalThis, '__connect_start', {
		enumerable: false, configurable: false, writable: false,
		value: (specJSON) => {
			const spec = JSON.parse(specJSON);
			const failed = (e) => JSON.stringify({ ok: false, error: describe(e) });
			let run;
			try {
				const nango = makeNango(spec);
				const exported = require(spec.module);
				const def = exported && exported.default !== undefined ? exported.default : exported;
				let fn;
				if (typeof def === 'function') {
					fn = spec.mode === 'webhook' ? (exported.onWebhookPayloadReceived || null) : def;
					if (!fn) throw new Error('the function has no webhook handler (onWebhookPayloadReceived)');
				} else if (def && typeof def === 'object') {
					fn = spec.mode === 'webhook' ? def.onWebhook : def.exec;
					if (typeof fn !== 'function') throw new Error(spec.mode === 'webhook' ? 'the sync has no onWebhook handler' : 'the module\'s default export has no exec function');
					fn = fn.bind(def);
				} else {
					throw new Error('the module exports no function: module.exports.default must be an object with exec, or a function');
				}
				run = spec.mode === 'action' || spec.mode === 'webhook' ? fn(nango, spec.input) : fn(nango);
			} catch (e) {
				return Promise.resolve(failed(e));
			}
			return Promise.resolve(run).then(
				(v) => {
					let out;
					try { out = v === undefined ? undefined : JSON.stringify(v); } catch (e) { return failed(new Error('the output cannot be encoded as JSON: ' + e.message)); }
					return JSON.stringify({ ok: true, value: out === undefined ? null : out });
				},
				failed,
			);
		},
	});
})();
