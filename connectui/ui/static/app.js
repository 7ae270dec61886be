// The pre-built connect UI. Plain JavaScript, no dependencies, no inline
// handlers: the page's Content-Security-Policy runs this file only.
//
// It gets the connect session token from ?session_token= (connect_link) or
// from the {type:"session_token"} message of @nangohq/frontend's
// openConnectUI, lists the session's integrations, collects what the chosen
// one needs and connects it: one POST for API key, Basic, client
// credentials and unauthenticated integrations; a popup on
// /oauth/connect/{integration} for OAuth. See the package documentation of
// connectui for the messages it posts to its parent.
(function () {
    'use strict';

    var doc = document;
    var root = doc.documentElement;
    var card = doc.getElementById('card');
    var view = doc.getElementById('view');
    var backButton = doc.getElementById('back');
    var closeButton = doc.getElementById('close');
    var watermark = doc.getElementById('watermark');
    var query = new URLSearchParams(window.location.search);
    var inFrame = window.parent !== window;

    var POPUP_WIDTH = 500;
    var POPUP_HEIGHT = 600;
    var POLL_MS = 1000;
    var CLOSED_GRACE_MS = 2500;
    var CALLBACK_CHANNEL = 'nango-oauth-callback';

    // ------------------------------------------------------------------
    // Strings

    var STRINGS = {
        en: {
            title: 'Connect an account',
            loading: 'Loading…',
            selectIntegration: 'Select the account to connect',
            reconnect: 'Reconnect {name}',
            link: 'Link your {name} account',
            noIntegrations: 'There is no integration to connect. Ask the application for a new link.',
            missingToken: 'This page needs a connect session. Open the link the application gave you.',
            waitingToken: 'Waiting for the connect session…',
            expired: 'This connect link has expired or was already used. Ask the application for a new one.',
            loadFailed: 'The connect service could not be reached. Check your connection and try again.',
            retry: 'Try again',
            connect: 'Connect',
            connecting: 'Connecting…',
            authorizeInPopup: 'Finish signing in to {name} in the window that opened.',
            popupBlocked: 'Your browser blocked the sign-in window. Allow pop-ups for this page and try again.',
            windowClosed: 'The sign-in window was closed before the connection was made.',
            success: 'Connected',
            successText: 'Your {name} account is connected.',
            done: 'Done',
            another: 'Connect another account',
            required: 'Required',
            invalidFormat: 'This value does not have the expected format.',
            docs: 'How do I find these?',
            docsField: 'Help',
            apiKey: 'API key',
            organizationId: 'Organization ID',
            devKey: 'Developer key',
            tokenId: 'Token ID',
            tokenSecret: 'Token secret',
            roleArn: 'IAM role ARN',
            username: 'Username',
            password: 'Password',
            clientId: 'OAuth client ID',
            clientSecret: 'OAuth client secret',
            ownApp: 'Use your own OAuth app',
            noFields: 'You will sign in to {name} and allow access.',
            unsupported: 'This integration cannot be connected here (auth mode {mode}).',
            validationFailed: '{name} did not accept these credentials. Check them and try again.',
            closedNotice: 'You can close this window now.',
            secured: 'Secured by',
        },
        fr: {
            title: 'Connecter un compte',
            loading: 'Chargement…',
            selectIntegration: 'Choisissez le compte à connecter',
            reconnect: 'Reconnecter {name}',
            link: 'Connectez votre compte {name}',
            noIntegrations: 'Aucune intégration à connecter. Demandez un nouveau lien à l’application.',
            missingToken: 'Cette page a besoin d’une session de connexion. Ouvrez le lien fourni par l’application.',
            waitingToken: 'En attente de la session de connexion…',
            expired: 'Ce lien a expiré ou a déjà servi. Demandez-en un nouveau à l’application.',
            loadFailed: 'Le service de connexion est injoignable. Vérifiez votre connexion et réessayez.',
            retry: 'Réessayer',
            connect: 'Connecter',
            connecting: 'Connexion…',
            authorizeInPopup: 'Terminez la connexion à {name} dans la fenêtre qui s’est ouverte.',
            popupBlocked: 'Votre navigateur a bloqué la fenêtre de connexion. Autorisez les fenêtres pop-up pour cette page et réessayez.',
            windowClosed: 'La fenêtre de connexion a été fermée avant la fin.',
            success: 'Connecté',
            successText: 'Votre compte {name} est connecté.',
            done: 'Terminer',
            another: 'Connecter un autre compte',
            required: 'Obligatoire',
            invalidFormat: 'Cette valeur n’a pas le format attendu.',
            docs: 'Où trouver ces informations ?',
            docsField: 'Aide',
            apiKey: 'Clé d’API',
            organizationId: 'ID de l’organisation',
            devKey: 'Clé de développeur',
            tokenId: 'ID du jeton',
            tokenSecret: 'Secret du jeton',
            roleArn: 'ARN du rôle IAM',
            username: 'Nom d’utilisateur',
            password: 'Mot de passe',
            clientId: 'Identifiant client OAuth',
            clientSecret: 'Secret client OAuth',
            ownApp: 'Utilisez votre propre application OAuth',
            noFields: 'Vous allez vous connecter à {name} et autoriser l’accès.',
            unsupported: 'Cette intégration ne peut pas être connectée ici (mode {mode}).',
            validationFailed: '{name} n’a pas accepté ces identifiants. Vérifiez-les et réessayez.',
            closedNotice: 'Vous pouvez fermer cette fenêtre.',
            secured: 'Sécurisé par',
        },
    };
    var lang = (query.get('lang') || navigator.language || 'en').toLowerCase();
    var strings = STRINGS[lang.split('-')[0]] || STRINGS.en;
    function t(key, vars) {
        var s = strings[key] || STRINGS.en[key] || key;
        if (vars) {
            s = s.replace(/\{(\w+)\}/g, function (m, k) {
                return vars[k] !== undefined ? String(vars[k]) : m;
            });
        }
        return s;
    }
    if (query.get('lang')) {
        root.lang = query.get('lang');
    }
    doc.title = t('title');

    // ------------------------------------------------------------------
    // State

    var state = {
        token: null,
        apiURL: resolveAPIURL(),
        detectClosed: query.get('detectClosedAuthWindow') === 'true',
        themeParam: oneOf(query.get('theme'), ['light', 'dark', 'system']),
        session: null,
        integrations: [],
        providers: {},
        flow: null,
        generation: 0, // bumped by every new token: late answers of an older one are dropped
        backTo: null,
    };

    function oneOf(v, allowed) {
        return allowed.indexOf(v) >= 0 ? v : null;
    }

    // resolveAPIURL returns the API base: the apiURL query parameter when
    // its origin is allowed (the page's own, or one the server lists),
    // else the server's default, else the parent of this page's address.
    function resolveAPIURL() {
        var fallback = card.dataset.apiUrl || new URL('../', window.location.href).href;
        var wanted = query.get('apiURL');
        if (wanted) {
            var allowed = [window.location.origin];
            try {
                allowed = allowed.concat(JSON.parse(card.dataset.allowedOrigins || '[]') || []);
            } catch (e) {
                // keep the page's own origin only
            }
            try {
                var u = new URL(wanted);
                if ((u.protocol === 'http:' || u.protocol === 'https:') && allowed.indexOf(u.origin) >= 0) {
                    return trimSlash(u.href);
                }
            } catch (e) {
                // not a URL: use the default
            }
            console.warn('connect UI: apiURL ' + wanted + ' is not an allowed origin; using ' + trimSlash(fallback));
        }
        return trimSlash(fallback);
    }

    function trimSlash(s) {
        return s.replace(/\/+$/, '');
    }

    // ------------------------------------------------------------------
    // Messages to the parent (openConnectUI). Never a secret: the target
    // origin is "*".

    function post(type, payload) {
        if (!inFrame) {
            return;
        }
        var msg = payload === undefined ? { type: type } : { type: type, payload: payload };
        window.parent.postMessage(msg, '*');
    }

    function postError(code, message) {
        post('error', { errorType: code || 'unknown_error', errorMessage: message || '' });
    }

    // ------------------------------------------------------------------
    // API

    function ApiError(status, code, message) {
        this.status = status;
        this.code = code;
        this.message = message;
    }

    function request(method, path, opts) {
        opts = opts || {};
        var headers = { Accept: 'application/json', 'Accept-Language': lang };
        if (opts.bearer !== false) {
            headers.Authorization = 'Bearer ' + state.token;
        }
        var init = { method: method, headers: headers, credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer' };
        if (opts.body !== undefined) {
            headers['Content-Type'] = 'application/json';
            init.body = JSON.stringify(opts.body);
        }
        var url = state.apiURL + path + (opts.query ? '?' + opts.query.toString() : '');
        return fetch(url, init).then(
            function (res) {
                return res.text().then(function (text) {
                    var body = null;
                    if (text) {
                        try {
                            body = JSON.parse(text);
                        } catch (e) {
                            body = null;
                        }
                    }
                    if (!res.ok) {
                        var err = (body && body.error) || {};
                        throw new ApiError(res.status, err.code || 'http_' + res.status, err.message || '');
                    }
                    return body;
                });
            },
            function () {
                throw new ApiError(0, 'network_error', t('loadFailed'));
            }
        );
    }

    // ------------------------------------------------------------------
    // DOM helpers: everything from the server goes in as text.

    function el(tag, attrs, children) {
        var node = doc.createElement(tag);
        if (attrs) {
            Object.keys(attrs).forEach(function (k) {
                var v = attrs[k];
                if (v === undefined || v === null || v === false) {
                    return;
                }
                if (k === 'text') {
                    node.textContent = v;
                } else if (k === 'class') {
                    node.className = v;
                } else if (k.slice(0, 2) === 'on') {
                    node.addEventListener(k.slice(2), v);
                } else if (v === true) {
                    node.setAttribute(k, '');
                } else {
                    node.setAttribute(k, String(v));
                }
            });
        }
        (children || []).forEach(function (c) {
            if (c) {
                node.appendChild(typeof c === 'string' ? doc.createTextNode(c) : c);
            }
        });
        return node;
    }

    function show(nodes, opts) {
        opts = opts || {};
        view.replaceChildren.apply(view, nodes);
        state.backTo = opts.back || null;
        backButton.hidden = !state.backTo;
        view.dataset.screen = opts.screen || '';
        var focus = view.querySelector('[autofocus]');
        if (focus) {
            focus.focus();
        }
    }

    function spinner(label) {
        return el('div', { class: 'center' }, [
            el('div', { class: 'spinner', role: 'progressbar', 'aria-label': label || t('loading') }),
            label ? el('p', { class: 'muted', text: label }) : null,
        ]);
    }

    function showFatal(message, retry) {
        show(
            [
                el('div', { class: 'center fatal', role: 'alert' }, [
                    el('div', { class: 'badge badge-error', text: '!' }),
                    el('p', { text: message }),
                    retry ? el('button', { type: 'button', class: 'button', text: t('retry'), onclick: retry }) : null,
                ]),
            ],
            { screen: 'fatal' }
        );
    }

    function safeHref(u) {
        try {
            var parsed = new URL(u, window.location.href);
            return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.href : null;
        } catch (e) {
            return null;
        }
    }

    // apiAddress resolves a path from the API's root (such as a logo the
    // server serves, when it has no public URL to make it absolute) against
    // the API's base URL, which may have a path of its own: the page may not
    // live at the root of its host.
    function apiAddress(u) {
        return /^\/(?!\/)/.test(u) ? state.apiURL + u : u;
    }

    function logo(it) {
        var name = it.display_name || it.unique_key;
        var fallback = el('span', { class: 'logo logo-fallback', 'aria-hidden': 'true', text: (name || '?').charAt(0).toUpperCase() });
        var src = it.logo ? safeHref(apiAddress(it.logo)) : null;
        if (!src) {
            return fallback;
        }
        var img = el('img', { class: 'logo', src: src, alt: '', width: 32, height: 32 });
        img.addEventListener('error', function () {
            if (img.parentNode) {
                img.parentNode.replaceChild(fallback, img);
            }
        });
        return img;
    }

    function displayName(it) {
        return it.display_name || it.unique_key;
    }

    // ------------------------------------------------------------------
    // Branding

    var darkQuery = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;
    var themeListener = null;

    function applyTheme(settings) {
        var pref = state.themeParam || (settings && oneOf(settings.defaultTheme, ['light', 'dark', 'system'])) || 'system';
        var apply = function () {
            var dark = pref === 'dark' || (pref === 'system' && !!darkQuery && darkQuery.matches);
            root.dataset.theme = dark ? 'dark' : 'light';
            var palette = settings && settings.theme && (dark ? settings.theme.dark : settings.theme.light);
            var color = palette && palette.primary;
            if (typeof color === 'string' && /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.test(color)) {
                root.style.setProperty('--primary', color);
                root.style.setProperty('--on-primary', readableOn(color));
            } else {
                root.style.removeProperty('--primary');
                root.style.removeProperty('--on-primary');
            }
        };
        if (themeListener && darkQuery) {
            darkQuery.removeEventListener('change', themeListener);
            themeListener = null;
        }
        apply();
        if (pref === 'system' && darkQuery) {
            themeListener = apply;
            darkQuery.addEventListener('change', apply);
        }
    }

    // readableOn returns a text colour legible on the background colour.
    function readableOn(hex) {
        var h = hex.slice(1);
        if (h.length === 3) {
            h = h.charAt(0) + h.charAt(0) + h.charAt(1) + h.charAt(1) + h.charAt(2) + h.charAt(2);
        }
        var c = [0, 2, 4].map(function (i) {
            var v = parseInt(h.slice(i, i + 2), 16) / 255;
            return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
        });
        var lum = 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
        // The darker text wins from about 0.18 on: its contrast ratio is then the higher.
        return lum > 0.18 ? '#111418' : '#ffffff';
    }

    // ------------------------------------------------------------------
    // Start

    function start(token) {
        state.token = token;
        state.generation++;
        state.providers = {};
        cancelFlow();
        var gen = state.generation;
        show([spinner()], { screen: 'loading' });
        Promise.all([request('GET', '/connect/session'), request('GET', '/integrations')]).then(
            function (res) {
                if (gen !== state.generation) {
                    return;
                }
                state.session = (res[0] && res[0].data) || {};
                state.integrations = (res[1] && res[1].data) || [];
                var settings = state.session.connectUISettings;
                applyTheme(settings);
                watermark.hidden = !(settings && settings.showWatermark);
                post('settings_changed', settings || {});
                home();
            },
            function (err) {
                if (gen !== state.generation) {
                    return;
                }
                var expired = err.status === 401;
                var message = expired ? t('expired') : err.message || t('loadFailed');
                postError(err.code, err.message || message);
                showFatal(message, expired ? null : function () {
                    start(state.token);
                });
            }
        );
    }

    function home() {
        var list = state.integrations;
        if (list.length === 0) {
            showFatal(t('noIntegrations'));
            return;
        }
        if (list.length === 1 || state.session.isReconnecting) {
            openIntegration(list[0], null);
            return;
        }
        showList();
    }

    function showList() {
        var items = state.integrations.map(function (it) {
            return el('li', null, [
                el(
                    'button',
                    {
                        type: 'button',
                        class: 'integration',
                        'data-integration': it.unique_key,
                        onclick: function () {
                            openIntegration(it, showList);
                        },
                    },
                    [logo(it), el('span', { class: 'integration-name', text: displayName(it) }), el('span', { class: 'chevron', 'aria-hidden': 'true', text: '›' })]
                ),
            ]);
        });
        show([el('h1', { text: t('selectIntegration') }), el('ul', { class: 'integrations' }, items)], { screen: 'list' });
    }

    // ------------------------------------------------------------------
    // One integration

    function openIntegration(it, back) {
        var gen = state.generation;
        show([spinner()], { screen: 'loading', back: back });
        var cached = state.providers[it.provider];
        var p = cached
            ? Promise.resolve(cached)
            : request('GET', '/providers/' + encodeURIComponent(it.provider)).then(function (body) {
                  state.providers[it.provider] = (body && body.data) || {};
                  return state.providers[it.provider];
              });
        p.then(
            function (provider) {
                if (gen === state.generation) {
                    showForm(it, provider, back);
                }
            },
            function (err) {
                if (gen !== state.generation) {
                    return;
                }
                postError(err.code, err.message);
                showFatal(err.status === 401 ? t('expired') : err.message || t('loadFailed'), function () {
                    openIntegration(it, back);
                });
            }
        );
    }

    // The modes connected in a popup (the OAuth flows, app and plugin
    // installations) and those connected with one POST, at the paths
    // @nangohq/frontend uses.
    var POPUP_MODES = ['OAUTH2', 'OAUTH1', 'APP', 'CUSTOM', 'MCP_OAUTH2', 'MCP_OAUTH2_GENERIC', 'INSTALL_PLUGIN'];

    // ownAppApplies says whether an end user's own OAuth app can take part
    // in the provider's flow (the server's connections.OwnAppApplies): not
    // for a plugin installation, nor for an MCP server whose client is
    // registered for each flow.
    function ownAppApplies(provider) {
        var mode = provider.auth_mode;
        return mode !== 'INSTALL_PLUGIN' && mode !== 'MCP_OAUTH2_GENERIC' &&
            !(mode === 'MCP_OAUTH2' && provider.client_registration === 'dynamic');
    }
    var POST_PATHS = {
        API_KEY: '/api-auth/api-key/',
        BASIC: '/api-auth/basic/',
        OAUTH2_CC: '/oauth2/auth/',
        NONE: '/auth/unauthenticated/',
        TWO_STEP: '/auth/two-step/',
        JWT: '/auth/jwt/',
        SIGNATURE: '/auth/signature/',
        BILL: '/auth/bill/',
        TBA: '/auth/tba/',
        AWS_SIGV4: '/auth/aws-sigv4/',
    };
    // The credentials of a POST mode when the provider declares none (the
    // modes whose fields the route fixes), as [key, label key, secret].
    var MODE_CREDENTIALS = {
        SIGNATURE: [['username', 'username', false], ['password', 'password', true]],
        BILL: [['username', 'username', false], ['password', 'password', true], ['organization_id', 'organizationId', false], ['dev_key', 'devKey', true]],
        TBA: [['token_id', 'tokenId', false], ['token_secret', 'tokenSecret', true]],
        AWS_SIGV4: [['role_arn', 'roleArn', false]],
    };

    // fieldsFor lists the inputs an integration needs: the provider's
    // connection-config fields the session does not preset, then the
    // credentials of its auth mode.
    function fieldsFor(it, provider) {
        var defaults = ((state.session.integrations_config_defaults || {})[it.unique_key] || {}).connection_config || {};
        var mode = provider.auth_mode;
        var fields = [];
        var config = provider.connection_config || {};
        Object.keys(config)
            .map(function (k) {
                return { key: k, spec: config[k] || {} };
            })
            .filter(function (f) {
                return !f.spec.automated && !f.spec.hidden && !(typeof defaults[f.key] === 'string' && defaults[f.key] !== '');
            })
            .sort(function (a, b) {
                return (a.spec.order || 0) - (b.spec.order || 0) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
            })
            .forEach(function (f) {
                fields.push(field('param', f.key, f.spec, f.key));
            });
        var creds = provider.credentials || {};
        var cred = function (key, label, secret) {
            var spec = creds[key] || {};
            if (spec.hidden) {
                return;
            }
            var f = field('credential', key, spec, label);
            if (!spec.title) {
                f.label = label;
            }
            if (secret || spec.secret) {
                f.secret = true;
            }
            fields.push(f);
        };
        switch (mode) {
            case 'API_KEY':
                cred('apiKey', t('apiKey'), true);
                break;
            case 'BASIC':
                cred('username', t('username'), false);
                cred('password', t('password'), true);
                break;
            case 'OAUTH2_CC':
                cred('client_id', t('clientId'), false);
                cred('client_secret', t('clientSecret'), true);
                break;
            case 'TWO_STEP':
            case 'JWT':
            case 'SIGNATURE':
            case 'BILL':
            case 'TBA':
            case 'AWS_SIGV4':
                // The route fixes the fields of some modes; the provider's
                // credentials schema describes them (and the others').
                var fixed = MODE_CREDENTIALS[mode] || [];
                fixed.forEach(function (c) {
                    cred(c[0], t(c[1]), c[2]);
                });
                Object.keys(creds)
                    .filter(function (k) {
                        var spec = creds[k] || {};
                        return !spec.automated && !fixed.some(function (c) { return c[0] === k; });
                    })
                    .sort(function (a, b) {
                        return ((creds[a] || {}).order || 0) - ((creds[b] || {}).order || 0) || (a < b ? -1 : a > b ? 1 : 0);
                    })
                    .forEach(function (k) {
                        cred(k, k, false);
                    });
                break;
            default:
                if (POPUP_MODES.indexOf(mode) >= 0 && ownAppApplies(provider) &&
                    defaults.oauth_client_id_override === '' && defaults.oauth_client_secret_override === '') {
                    var id = field('override', 'oauth_client_id_override', {}, t('clientId'));
                    var secret = field('override', 'oauth_client_secret_override', {}, t('clientSecret'));
                    secret.secret = true;
                    id.group = secret.group = t('ownApp');
                    fields.push(id, secret);
                }
        }
        // The inputs of a signed assertion (a TWO_STEP provider's private
        // key, say), sent apart as assertionOption.
        var assertion = provider.assertion_option || {};
        Object.keys(assertion)
            .filter(function (k) {
                var spec = assertion[k] || {};
                return !spec.automated && !spec.hidden;
            })
            .sort(function (a, b) {
                return ((assertion[a] || {}).order || 0) - ((assertion[b] || {}).order || 0) || (a < b ? -1 : a > b ? 1 : 0);
            })
            .forEach(function (k) {
                fields.push(field('assertion', k, assertion[k] || {}, k));
            });
        return fields;
    }

    function field(kind, key, spec, label) {
        return {
            kind: kind,
            key: key,
            label: spec.title || label,
            description: spec.description || '',
            example: spec.example || '',
            pattern: spec.pattern || '',
            prefix: spec.prefix || '',
            suffix: spec.suffix || '',
            value: spec.default_value || '',
            optional: !!spec.optional,
            secret: !!spec.secret,
            boolean: spec.type === 'boolean',
            number: spec.type === 'number',
            docSection: spec.doc_section || '',
        };
    }

    function docsLink(it, provider) {
        var override = ((state.session.overrides || {})[it.unique_key] || {}).docs_connect;
        return safeHref(override || provider.docs_connect || '') || null;
    }

    function showForm(it, provider, back) {
        var name = displayName(it);
        var mode = provider.auth_mode;
        var popup = POPUP_MODES.indexOf(mode) >= 0;
        var supported = popup || POST_PATHS[mode] !== undefined;
        var fields = supported ? fieldsFor(it, provider) : [];
        var docs = docsLink(it, provider);
        var heading = el('div', { class: 'heading' }, [
            logo(it),
            el('h1', { text: state.session.isReconnecting ? t('reconnect', { name: name }) : t('link', { name: name }) }),
        ]);
        var errorBox = el('div', { class: 'error', role: 'alert', hidden: true });
        var status = el('p', { class: 'status muted', hidden: true });
        var submit = el('button', { type: 'submit', class: 'button primary', text: t('connect') });
        var inputs = [];
        var body = [];
        var group = null;
        fields.forEach(function (f, i) {
            if (f.group && f.group !== group) {
                group = f.group;
                body.push(el('p', { class: 'group', text: f.group }));
            }
            var input = renderInput(f, i === 0, docs);
            inputs.push({ field: f, input: input.input });
            body.push(input.node);
        });
        if (!supported) {
            body.push(el('p', { class: 'muted', text: t('unsupported', { mode: mode || '?' }) }));
            submit.disabled = true;
        } else if (fields.length === 0 && popup) {
            body.push(el('p', { class: 'muted', text: t('noFields', { name: name }) }));
        }
        var form = el('form', { class: 'form', novalidate: true, 'data-integration': it.unique_key }, body.concat([errorBox, status, submit]));
        form.addEventListener('submit', function (ev) {
            ev.preventDefault();
            if (submit.disabled) {
                return;
            }
            errorBox.hidden = true;
            var values = collect(inputs);
            if (!values) {
                return;
            }
            var ui = {
                busy: function (message) {
                    submit.disabled = true;
                    submit.textContent = t('connecting');
                    status.textContent = message || '';
                    status.hidden = !message;
                    form.setAttribute('aria-busy', 'true');
                },
                fail: function (message) {
                    submit.disabled = false;
                    submit.textContent = t('connect');
                    status.hidden = true;
                    form.removeAttribute('aria-busy');
                    errorBox.textContent = message;
                    errorBox.hidden = false;
                },
            };
            if (popup) {
                runOAuth(it, values, ui);
            } else {
                runPost(it, provider, values, ui);
            }
        });
        var nodes = [heading, form];
        if (docs) {
            nodes.push(el('p', { class: 'docs' }, [el('a', { href: docs, target: '_blank', rel: 'noopener noreferrer', text: t('docs') })]));
        }
        show(nodes, { screen: 'form', back: back });
    }

    function renderInput(f, first, docs) {
        var id = 'f-' + f.kind + '-' + f.key.replace(/[^A-Za-z0-9_-]/g, '_');
        var input;
        if (f.boolean) {
            input = el('input', { id: id, type: 'checkbox', name: f.key, checked: f.value === 'true' });
        } else {
            input = el('input', {
                id: id,
                name: f.key,
                type: f.secret ? 'password' : 'text',
                inputmode: f.number ? 'decimal' : null,
                autocomplete: f.secret ? 'new-password' : 'off',
                spellcheck: 'false',
                placeholder: f.example || null,
                value: f.value || null,
                required: !f.optional,
                autofocus: first,
            });
        }
        var label = el('label', { for: id, class: 'label' }, [f.label, f.optional ? null : el('span', { class: 'req', 'aria-hidden': 'true', text: ' *' })]);
        if (docs && f.docSection) {
            // The provider's guide, at this field's section.
            var u = new URL(docs);
            u.hash = f.docSection;
            label.appendChild(el('a', { class: 'field-docs', href: u.href, target: '_blank', rel: 'noopener noreferrer', text: t('docsField') }));
        }
        var help = f.description ? el('p', { class: 'help muted', text: f.description }) : null;
        var control = f.prefix || f.suffix
            ? el('div', { class: 'affix' }, [f.prefix ? el('span', { class: 'prefix', text: f.prefix }) : null, input, f.suffix ? el('span', { class: 'suffix', text: f.suffix }) : null])
            : input;
        var err = el('p', { class: 'field-error', hidden: true });
        input.addEventListener('input', function () {
            err.hidden = true;
            input.removeAttribute('aria-invalid');
        });
        input._error = err;
        var node = el('div', { class: 'field' + (f.boolean ? ' field-check' : '') }, f.boolean ? [input, label, help, err] : [label, control, help, err]);
        return { node: node, input: input };
    }

    // collect reads and checks the inputs: values by kind, or null after
    // marking the wrong ones.
    function collect(inputs) {
        var out = { param: {}, credential: {}, override: {}, assertion: {} };
        var bad = null;
        inputs.forEach(function (x) {
            var f = x.field;
            var v = f.boolean ? (x.input.checked ? 'true' : 'false') : x.input.value.trim();
            var problem = null;
            if (!f.boolean && v === '' && !f.optional) {
                problem = t('required');
            } else if (v !== '' && f.pattern) {
                try {
                    if (!new RegExp(f.pattern).test(v)) {
                        problem = t('invalidFormat');
                    }
                } catch (e) {
                    // a pattern this browser cannot compile is not checked here
                }
            }
            if (problem) {
                x.input._error.textContent = problem;
                x.input._error.hidden = false;
                x.input.setAttribute('aria-invalid', 'true');
                bad = bad || x.input;
                return;
            }
            if (v !== '' || f.kind === 'credential') {
                out[f.kind][f.key] = v;
            }
        });
        if (bad) {
            bad.focus();
            return null;
        }
        return out;
    }

    function paramsQuery(values) {
        var q = new URLSearchParams();
        q.set('connect_session_token', state.token);
        Object.keys(values.param).forEach(function (k) {
            q.append('params[' + k + ']', values.param[k]);
        });
        return q;
    }

    function friendly(err, it) {
        if (err.code === 'connection_validation_failed') {
            return t('validationFailed', { name: displayName(it) }) + (err.message ? ' (' + err.message + ')' : '');
        }
        if (err.code === 'unknown_connect_session_token') {
            return t('expired');
        }
        return err.message || err.code || t('loadFailed');
    }

    // postBody is the JSON body of a mode's POST, shaped as
    // @nangohq/frontend sends it: TWO_STEP, JWT and SIGNATURE carry their
    // type, a signed assertion's inputs go in assertionOption; AWS_SIGV4
    // carries the role and the region the end user gave.
    function postBody(provider, values) {
        var mode = provider.auth_mode;
        if (mode === 'NONE') {
            return undefined;
        }
        var body = {};
        Object.keys(values.credential).forEach(function (k) {
            body[k] = values.credential[k];
        });
        if (Object.keys(values.assertion).length > 0) {
            body.assertionOption = values.assertion;
        }
        switch (mode) {
            case 'TWO_STEP':
            case 'JWT':
            case 'SIGNATURE':
                body.type = mode;
                break;
            case 'AWS_SIGV4':
                if (values.param.region) {
                    body.region = values.param.region;
                }
                break;
        }
        return body;
    }

    // runPost connects an integration of a POST mode (API key, Basic,
    // client credentials, unauthenticated, two-step, JWT, signature, Bill,
    // TBA, AWS SigV4) with one POST, as @nangohq/frontend does.
    function runPost(it, provider, values, ui) {
        var gen = state.generation;
        ui.busy('');
        var body = postBody(provider, values);
        request('POST', POST_PATHS[provider.auth_mode] + encodeURIComponent(it.unique_key), { bearer: false, query: paramsQuery(values), body: body }).then(
            function (res) {
                if (gen !== state.generation) {
                    return;
                }
                succeed(it, { providerConfigKey: (res && res.providerConfigKey) || it.unique_key, connectionId: res && res.connectionId, isPending: false });
            },
            function (err) {
                if (gen !== state.generation) {
                    return;
                }
                postError(err.code, err.message);
                ui.fail(friendly(err, it));
            }
        );
    }

    // ------------------------------------------------------------------
    // OAuth in a popup

    function uuid() {
        if (window.crypto && crypto.randomUUID) {
            return crypto.randomUUID();
        }
        var b = new Uint8Array(16);
        crypto.getRandomValues(b);
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        var h = Array.prototype.map.call(b, function (x) {
            return (x + 0x100).toString(16).slice(1);
        }).join('');
        return h.slice(0, 8) + '-' + h.slice(8, 12) + '-' + h.slice(12, 16) + '-' + h.slice(16, 20) + '-' + h.slice(20);
    }

    function popupFeatures() {
        var w = Math.min(POPUP_WIDTH, window.screen.availWidth || POPUP_WIDTH);
        var h = Math.min(POPUP_HEIGHT, window.screen.availHeight || POPUP_HEIGHT);
        var left = Math.max(0, Math.round((window.screen.availWidth - w) / 2));
        var top = Math.max(0, Math.round((window.screen.availHeight - h) / 2));
        return 'left=' + left + ',top=' + top + ',width=' + w + ',height=' + h + ',scrollbars=yes,resizable=yes,status=no,toolbar=no,location=no,copyhistory=no,menubar=no,directories=no';
    }

    function cancelFlow() {
        var f = state.flow;
        if (!f) {
            return;
        }
        state.flow = null;
        f.stop();
    }

    function runOAuth(it, values, ui) {
        cancelFlow();
        // Open the window now, in the click, or the browser blocks it.
        var popup = window.open('', '_blank', popupFeatures());
        if (!popup || popup.closed) {
            postError('blocked_by_browser', 'Modal blocked by browser');
            ui.fail(t('popupBlocked'));
            return;
        }
        var flowId = uuid();
        var q = paramsQuery(values);
        q.set('ws_client_id', flowId);
        Object.keys(values.override).forEach(function (k) {
            q.set('credentials[' + k + ']', values.override[k]);
        });
        var authURL = state.apiURL + '/oauth/connect/' + encodeURIComponent(it.unique_key) + '?' + q.toString();
        popup.location.href = authURL;
        ui.busy(t('authorizeInPopup', { name: displayName(it) }));

        var apiOrigin = new URL(state.apiURL).origin;
        var timers = [];
        var channel = null;
        var closedAt = 0;
        var polling = false;
        var flow = {
            id: flowId,
            done: false,
            stop: function () {
                flow.done = true;
                timers.forEach(clearInterval);
                window.removeEventListener('message', onMessage);
                if (channel) {
                    channel.close();
                }
            },
        };
        state.flow = flow;

        function finish(ok, payload) {
            if (flow.done) {
                return;
            }
            flow.stop();
            if (state.flow === flow) {
                state.flow = null;
            }
            setTimeout(function () {
                try {
                    if (!popup.closed) {
                        popup.close();
                    }
                } catch (e) {
                    // already gone
                }
            }, 1000);
            if (ok) {
                succeed(it, payload);
            } else {
                postError(payload.errorType, payload.message);
                ui.fail(friendly({ code: payload.errorType, message: payload.message }, it));
            }
        }

        function fromCallback(data, ack) {
            if (!data || typeof data !== 'object' || flow.done) {
                return;
            }
            var p = data.payload || {};
            if (data.type === 'nango_oauth_callback_success') {
                if (p.providerConfigKey && p.providerConfigKey !== it.unique_key) {
                    return;
                }
                ack();
                finish(true, { providerConfigKey: p.providerConfigKey || it.unique_key, connectionId: p.connectionId, isPending: !!p.isPending });
            } else if (data.type === 'nango_oauth_callback_error') {
                ack();
                finish(false, { errorType: p.errorType || 'unknown_error', message: p.message || '' });
            }
        }

        function onMessage(ev) {
            // Only the popup this flow opened (its window stays the same
            // object across the navigations to the provider and back).
            if (ev.source !== popup || ev.origin !== apiOrigin) {
                return;
            }
            fromCallback(ev.data, function () {
                if (ev.source && ev.source.postMessage) {
                    ev.source.postMessage({ type: 'nango_oauth_callback_ack' }, '*');
                }
            });
        }
        window.addEventListener('message', onMessage);
        if (window.BroadcastChannel) {
            channel = new BroadcastChannel(CALLBACK_CHANNEL);
            channel.onmessage = function (ev) {
                fromCallback(ev.data, function () {
                    channel.postMessage({ type: 'nango_oauth_callback_ack' });
                });
            };
        }

        // Fallback: the flow's status, for when the popup cannot talk back.
        function poll() {
            if (flow.done || polling) {
                return;
            }
            polling = true;
            request('GET', '/oauth/status/' + encodeURIComponent(flowId)).then(
                function (body) {
                    polling = false;
                    var d = (body && body.data) || {};
                    if (d.status === 'success') {
                        finish(true, { providerConfigKey: d.providerConfigKey || it.unique_key, connectionId: d.connectionId, isPending: !!d.isPending });
                    } else if (d.status === 'error') {
                        var e = d.error || {};
                        finish(false, { errorType: e.type || 'unknown_error', message: e.message || '' });
                    } else {
                        closedCheck();
                    }
                },
                function () {
                    polling = false; // 404 until the flow exists
                    closedCheck();
                }
            );
        }

        // closedCheck ends the flow once the popup has been closed for a
        // while without an outcome.
        function closedCheck() {
            if (flow.done || !closedAt || Date.now() - closedAt < CLOSED_GRACE_MS) {
                return;
            }
            flow.stop();
            if (state.flow === flow) {
                state.flow = null;
            }
            if (state.detectClosed) {
                postError('window_closed', 'The authorization window was closed before the authorization flow was completed');
            }
            ui.fail(t('windowClosed'));
        }

        timers.push(setInterval(poll, POLL_MS));
        timers.push(
            setInterval(function () {
                if (!closedAt && popup.closed) {
                    closedAt = Date.now();
                    poll();
                }
            }, 250)
        );
    }

    function succeed(it, payload) {
        post('connect', { providerConfigKey: payload.providerConfigKey, connectionId: payload.connectionId, isPending: !!payload.isPending });
        var more = state.integrations.length > 1 && !state.session.isReconnecting;
        show(
            [
                el('div', { class: 'center success', 'data-connection-id': payload.connectionId || '' }, [
                    el('div', { class: 'badge badge-ok', 'aria-hidden': 'true', text: '✓' }),
                    el('h1', { text: t('success') }),
                    el('p', { class: 'muted', text: t('successText', { name: displayName(it) }) }),
                    el('button', { type: 'button', class: 'button primary', id: 'done', text: t('done'), onclick: closeUI, autofocus: true }),
                    more ? el('button', { type: 'button', class: 'button link', text: t('another'), onclick: showList }) : null,
                ]),
            ],
            { screen: 'success' }
        );
    }

    function closeUI() {
        cancelFlow();
        if (inFrame) {
            post('close');
            return;
        }
        show([el('div', { class: 'center' }, [el('p', { text: t('closedNotice') })])], { screen: 'closed' });
        try {
            window.close();
        } catch (e) {
            // a window this script did not open stays
        }
    }

    // ------------------------------------------------------------------
    // Wiring

    backButton.addEventListener('click', function () {
        cancelFlow();
        if (state.backTo) {
            state.backTo();
        }
    });
    closeButton.addEventListener('click', closeUI);
    closeButton.hidden = !inFrame;
    if (inFrame) {
        root.classList.add('in-frame'); // a see-through backdrop over the host's page
    }
    watermark.firstChild.textContent = t('secured') + ' ';
    applyTheme(null);

    window.addEventListener('message', function (ev) {
        if (ev.source !== window.parent || ev.source === window) {
            return;
        }
        var d = ev.data;
        if (d && typeof d === 'object' && d.type === 'session_token' && typeof d.sessionToken === 'string' && d.sessionToken !== '') {
            if (d.sessionToken !== state.token) {
                start(d.sessionToken);
            }
        }
    });

    var fromURL = query.get('session_token');
    if (fromURL) {
        // Keep the token out of the history and of later copies of the URL.
        query.delete('session_token');
        var rest = query.toString();
        try {
            window.history.replaceState(null, '', window.location.pathname + (rest ? '?' + rest : '') + window.location.hash);
        } catch (e) {
            // not fatal
        }
        start(fromURL);
    } else if (inFrame) {
        show([spinner(t('waitingToken'))], { screen: 'waiting' });
    } else {
        showFatal(t('missingToken'));
    }
    post('ready');
})();
