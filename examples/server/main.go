package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store/postgres"
	"github.com/embedauth/connect/store/sqlite"
)

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, logger, os.Getenv); err != nil {
		logger.Error("server failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, logger *slog.Logger, getenv func(string) string) error {
	port := getenv("PORT")
	if port == "" {
		port = "3003"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("PORT %q is not a port number", port)
	}

	db, err := parseDatabaseURL(getenv)
	if err != nil {
		return err
	}
	hooks, err := webhookSettings(getenv)
	if err != nil {
		return err
	}
	examples, err := exampleFunctions(getenv("CONNECT_EXAMPLE_FUNCTIONS"))
	if err != nil {
		return err
	}
	cfg := connect.Config{Logger: logger, PublicURL: getenv("CONNECT_PUBLIC_URL")}
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://localhost:" + port
	}
	// A connect session's connect_link is the connect UI's address with
	// ?session_token=: CONNECT_UI_URL, else CONNECT_PUBLIC_URL + "/connect/".
	cfg.ConnectUIURL = getenv("CONNECT_UI_URL")
	// Provider logos from the host's own directory: CONNECT_LOGO_BASE_URL
	// + "/" + provider + ".svg" (connect.New checks the URL).
	cfg.LogoBaseURL = getenv("CONNECT_LOGO_BASE_URL")
	if v := getenv("CONNECT_RATE_LIMIT"); v != "" {
		if cfg.RateLimitRequests, err = strconv.Atoi(v); err != nil {
			return fmt.Errorf("CONNECT_RATE_LIMIT %q is not an integer", v)
		}
	}
	if cfg.Egress, cfg.Webhooks.Policy, err = networkPolicies(getenv); err != nil {
		return err
	}
	if cfg.Webhooks.Schedule, err = retrySchedule(getenv("CONNECT_WEBHOOK_RETRY_SCHEDULE")); err != nil {
		return err
	}
	if v := getenv("CONNECT_RATE_LIMIT_WINDOW"); v != "" {
		if cfg.RateLimitWindow, err = time.ParseDuration(v); err != nil || cfg.RateLimitWindow < time.Second || cfg.RateLimitWindow%time.Second != 0 {
			return fmt.Errorf("CONNECT_RATE_LIMIT_WINDOW %q is not a whole number of seconds of at least 1s, such as 1m", v)
		}
	}

	if err := storageLimits(getenv, &cfg); err != nil {
		return err
	}
	bodyWindow, bodyMin, err := bodyProgress(getenv)
	if err != nil {
		return err
	}

	if v := getenv("CONNECT_PROXY_CACHE_ENTRIES"); v != "" {
		if cfg.ProxyCacheEntries, err = strconv.Atoi(v); err != nil || cfg.ProxyCacheEntries < 1 {
			return fmt.Errorf("CONNECT_PROXY_CACHE_ENTRIES %q is not a positive integer", v)
		}
	}

	// Without a key given, SQLite's data gets the key of the data
	// directory, made at the first start. Postgres needs one given: a key
	// beside a database on another machine is not backed up with it.
	var dataKey func() (string, string, error)
	if db.postgres == "" {
		dataKey = func() (string, string, error) {
			dir, err := dataDir(getenv)
			if err != nil {
				return "", "", err
			}
			file := db.sqlite
			if file == "" {
				file = filepath.Join(dir, databaseFileName)
			}
			return dataDirKey(dir, file)
		}
	}
	keys, keySource, err := encryptionKeys(getenv, dataKey)
	if err != nil {
		return err
	}
	if path := getenv("CONNECT_ENCRYPTION_KEY_FILE"); path != "" {
		warnIfShared(logger, path)
	}
	cfg.EncryptionKeys = keys
	if db.postgres != "" {
		opts := &postgres.Options{Logger: logger,
			// Webhook deliveries live in the database: stored with their
			// job in the transaction of the change that caused them, kept
			// across restarts, shared by every instance.
			Scheduler:         postgres.SchedulerConfig{Logger: logger, JobTimeout: 2 * time.Minute},
			RateLimitRequests: max(cfg.RateLimitRequests, 0), RateLimitWindow: cfg.RateLimitWindow}
		if v := getenv("CONNECT_DATABASE_MAX_CONNS"); v != "" {
			if opts.MaxConns, err = strconv.Atoi(v); err != nil || opts.MaxConns < 1 {
				return fmt.Errorf("CONNECT_DATABASE_MAX_CONNS %q is not a positive integer", v)
			}
		}
		// One pool for the Store, River and the rate limiter, sized and
		// kept open (postgres.Open): sessions are not closed and reopened
		// under load. Connect migrates too.
		pg, err := postgres.Connect(ctx, db.postgres, opts)
		if err != nil {
			return fmt.Errorf("DATABASE_URL: %w", err)
		}
		defer pg.Close()
		cfg.Store, cfg.Scheduler = pg.Store, pg.Scheduler
		if cfg.RateLimitRequests >= 0 {
			cfg.RateLimiter = pg.RateLimiter
		}
		logger.Info("data in Postgres, secrets sealed with the encryption key: back up both together",
			"database", redactedURL(db.postgres), "key", keySource, "max_conns", pg.DB.Stats().MaxOpenConnections)
	} else {
		path, name := db.sqlite, "DATABASE_URL"
		if path == "" {
			dir, err := dataDir(getenv)
			if err != nil {
				return err
			}
			path, name = filepath.Join(dir, databaseFileName), "the database "+filepath.Join(dir, databaseFileName)
		} else if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
			return fmt.Errorf("DATABASE_URL: the directory of the SQLite file %s does not exist: create it, or name a file in one that does", path)
		}
		// The file is private to this user (SQLite gives its -wal and
		// -shm files the same mode): made 0600 before SQLite opens it.
		if f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			f.Close()
		}
		// One file: the Store, and River's jobs (webhook deliveries among
		// them) stored in the transaction of the change that caused them.
		// Every commit is on disk before it is acknowledged. Connect
		// migrates too.
		lite, err := sqlite.Connect(ctx, path, &sqlite.Options{Logger: logger,
			Scheduler: sqlite.SchedulerConfig{Logger: logger, JobTimeout: 2 * time.Minute}})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		defer lite.Close()
		cfg.Store, cfg.Scheduler = lite.Store, lite.Scheduler
		logger.Info("data in SQLite, secrets sealed with the encryption key: back up both together",
			"database", lite.Store.Path(), "key", keySource)
	}

	if path := getenv("CONNECT_PROVIDERS_FILE"); path != "" {
		if cfg.Providers, err = loadProviders(logger, path, getenv("CONNECT_PROVIDERS_STRICT")); err != nil {
			return err
		}
	}

	// CONNECT_AWS_STS_ENDPOINT replaces AWS's STS endpoint of AWS SigV4
	// integrations in builtin STS mode: a URL in which {region} stands for
	// the connection's (checked) region. The operator's setting, for a
	// private STS or a test; end users never choose it.
	if tmpl := getenv("CONNECT_AWS_STS_ENDPOINT"); tmpl != "" {
		if u, err := url.Parse(strings.ReplaceAll(tmpl, "{region}", "us-east-1")); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			return errors.New("CONNECT_AWS_STS_ENDPOINT must be an http(s) URL, {region} standing for the region")
		}
		cfg.AWSSTSEndpoint = func(region string) string { return strings.ReplaceAll(tmpl, "{region}", region) }
	}
	svc, err := connect.New(cfg)
	if err != nil {
		return err
	}
	if err := registerExamples(svc, logger, examples); err != nil {
		return err
	}
	// Refuse to run without a key that stored secrets need: every read of
	// them would fail.
	if err := svc.CheckEncryptionKeys(ctx); err != nil {
		return missingKeysHelp(err, keys)
	}
	handler, err := mount(cfg.PublicURL, svc.Handler())
	if err != nil {
		return err
	}
	if len(keys) > 1 {
		n, err := svc.ReencryptSecrets(ctx)
		if err != nil {
			return fmt.Errorf("re-encrypt secrets: %w", err)
		}
		logger.Info("re-encrypted secrets under the primary key", "values", n)
	}
	if err := setupDev(ctx, svc, logger, getenv, hooks); err != nil {
		return err
	}
	if err := applyBranding(ctx, svc, getenv); err != nil {
		return err
	}
	if err := svc.Start(ctx); err != nil {
		return err
	}

	// ReadHeaderTimeout bounds the headers; the body must keep a minimum
	// pace (connect.RequireBodyProgress) rather than end within a fixed
	// time, so that the proxy streams large bodies while a client that
	// trickles one is cut off.
	srv := &http.Server{
		Addr:              ":" + port,
		Handler:           connect.RequireBodyProgress(handler, bodyWindow, bodyMin),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	logger.Info("listening", "addr", srv.Addr, "public_url", cfg.PublicURL, "connect_ui_url", connectUIURL(cfg))

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return svc.Stop(shutdownCtx)
}

// storageLimits reads what bounds storage: CONNECT_WEBHOOK_DELIVERY_RETENTION
// and CONNECT_LOG_RETENTION (how long finished webhook deliveries and
// operations log entries are kept: a Go duration such as 720h, a number of
// days such as 30d, or "forever"), CONNECT_INCOMING_WEBHOOK_MAX_BODY and
// CONNECT_INCOMING_WEBHOOK_QUOTA (bytes; the quota may be "off"), and
// CONNECT_INCOMING_WEBHOOK_LOG_INTERVAL (how often each integration's log
// entries of unverified webhooks are written, per outcome: a duration such
// as 5m). Unset ones keep the library's defaults (30 days, 15 days, 1 MiB,
// 256 MiB, 1 minute).
func storageLimits(getenv func(string) string, cfg *connect.Config) error {
	var err error
	if cfg.Retention.WebhookDeliveries, err = retention(getenv, "CONNECT_WEBHOOK_DELIVERY_RETENTION"); err != nil {
		return err
	}
	if cfg.Retention.Logs, err = retention(getenv, "CONNECT_LOG_RETENTION"); err != nil {
		return err
	}
	if cfg.IncomingWebhooks.MaxBody, err = byteCount(getenv, "CONNECT_INCOMING_WEBHOOK_MAX_BODY", false); err != nil {
		return err
	}
	if cfg.IncomingWebhooks.StorageQuota, err = byteCount(getenv, "CONNECT_INCOMING_WEBHOOK_QUOTA", true); err != nil {
		return err
	}
	if v := getenv("CONNECT_INCOMING_WEBHOOK_LOG_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return fmt.Errorf("CONNECT_INCOMING_WEBHOOK_LOG_INTERVAL %q must be a duration of at least 1s such as 5m", v)
		}
		cfg.IncomingWebhooks.LogInterval = d
	}
	return nil
}

// retention reads a retention period: 0 when unset (the default), negative
// for "forever".
func retention(getenv func(string) string, name string) (time.Duration, error) {
	v := getenv(name)
	switch {
	case v == "":
		return 0, nil
	case v == "forever":
		return -1, nil
	case strings.HasSuffix(v, "d"):
		if n, err := strconv.Atoi(strings.TrimSuffix(v, "d")); err == nil && n >= 1 && n <= 36500 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	default:
		if d, err := time.ParseDuration(v); err == nil && d >= time.Hour {
			return d, nil
		}
	}
	return 0, fmt.Errorf("%s %q must be a number of days such as 30d, a duration of at least 1h such as 720h, or forever", name, v)
}

// byteCount reads a positive number of bytes: 0 when unset (the default),
// negative for "off" when off is allowed.
func byteCount(getenv func(string) string, name string, off bool) (int64, error) {
	v := getenv(name)
	if v == "" {
		return 0, nil
	}
	if off && v == "off" {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		if off {
			return 0, fmt.Errorf("%s %q must be a positive number of bytes, or off", name, v)
		}
		return 0, fmt.Errorf("%s %q must be a positive number of bytes", name, v)
	}
	return n, nil
}

// bodyProgress reads the minimum pace of request bodies
// (connect.RequireBodyProgress): CONNECT_BODY_MIN_BYTES (default 16384)
// must arrive within each CONNECT_BODY_WINDOW (default 30s) of waiting.
func bodyProgress(getenv func(string) string) (time.Duration, int64, error) {
	var window time.Duration
	if v := getenv("CONNECT_BODY_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Millisecond {
			return 0, 0, fmt.Errorf("CONNECT_BODY_WINDOW %q must be a duration such as 30s", v)
		}
		window = d
	}
	minBytes, err := byteCount(getenv, "CONNECT_BODY_MIN_BYTES", false)
	return window, minBytes, err
}

// loadProviders adds the providers of the file to the embedded ones. A
// provider of the file that cannot be used is listed as unusable, with one
// warning line saying why, unless strict is "true": then any problem stops
// the server, every problem listed.
func loadProviders(logger *slog.Logger, path, strict string) (*integrations.Catalog, error) {
	var opts integrations.BuildOptions
	switch strict {
	case "", "false":
	case "true":
		opts.Strict = true
	default:
		return nil, fmt.Errorf("CONNECT_PROVIDERS_STRICT %q must be true or false", strict)
	}
	extra, err := integrations.LoadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CONNECT_PROVIDERS_FILE: %w", err)
	}
	def, err := integrations.DefaultCatalog()
	if err != nil {
		return nil, err
	}
	cat, err := integrations.BuildCatalog(def, opts, extra...)
	if err != nil {
		return nil, fmt.Errorf("CONNECT_PROVIDERS_FILE (strict): %w", err)
	}
	problems := cat.Problems()
	for _, u := range problems {
		logger.Warn("provider unusable", "file", path, "provider", u.Provider, "reason", u.Reason())
	}
	logger.Info("loaded providers", "file", path, "count", len(extra), "unusable", len(problems))
	return cat, nil
}

// networkPolicies reads the outbound address policies. Provider calls
// (proxy, token and refresh requests, credential checks) reach only public
// addresses unless CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS=true (or its
// older name CONNECT_PROXY_ALLOW_PRIVATE_NETWORKS): end users choose parts
// of those URLs. Webhook URLs are set by the API-key holders of the
// environments, which on this server are the operator's: they may reach
// private networks unless CONNECT_WEBHOOK_ALLOW_PRIVATE_NETWORKS=false.
// Cloud metadata, link-local and the other special addresses stay refused
// either way. A refusal names the variable that allows private networks.
func networkPolicies(getenv func(string) string) (providers, webhooks egress.Policy, err error) {
	flag := func(name string, def bool) (bool, error) {
		switch v := getenv(name); v {
		case "":
			return def, nil
		case "true":
			return true, nil
		case "false":
			return false, nil
		default:
			return false, fmt.Errorf("%s %q must be true or false", name, v)
		}
	}
	p, err := flag("CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS", false)
	if err != nil {
		return providers, webhooks, err
	}
	old, err := flag("CONNECT_PROXY_ALLOW_PRIVATE_NETWORKS", false)
	if err != nil {
		return providers, webhooks, err
	}
	if getenv("CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS") != "" && getenv("CONNECT_PROXY_ALLOW_PRIVATE_NETWORKS") != "" && p != old {
		return providers, webhooks, errors.New("CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS and its older name CONNECT_PROXY_ALLOW_PRIVATE_NETWORKS disagree: set one")
	}
	providers.AllowPrivateNetworks = p || old
	providers.Setting = "CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS=true"
	w, err := flag("CONNECT_WEBHOOK_ALLOW_PRIVATE_NETWORKS", true)
	if err != nil {
		return providers, webhooks, err
	}
	webhooks.AllowPrivateNetworks = w
	webhooks.Setting = "CONNECT_WEBHOOK_ALLOW_PRIVATE_NETWORKS=true"
	return providers, webhooks, nil
}

// mount serves h under the path of publicURL (CONNECT_PUBLIC_URL), as the
// README's "Embed it" mounts the library under a prefix with
// http.StripPrefix, or at the root when that URL has no path. The service's
// links, its OAuth redirect URI and the websocketsPath it announces carry
// the same path, so the server answers them as they are.
func mount(publicURL string, h http.Handler) (http.Handler, error) {
	u, err := url.Parse(publicURL)
	if err != nil {
		return nil, fmt.Errorf("CONNECT_PUBLIC_URL: %w", err)
	}
	base := strings.TrimRight(u.Path, "/")
	if base == "" {
		return h, nil
	}
	if !regexp.MustCompile(`^(/[A-Za-z0-9._~-]+)+$`).MatchString(base) || strings.Contains(base+"/", "/./") || strings.Contains(base+"/", "/../") {
		return nil, fmt.Errorf("CONNECT_PUBLIC_URL: the path %q may hold only letters, digits and . _ ~ - between slashes", u.Path)
	}
	mux := http.NewServeMux()
	mux.Handle(base+"/", http.StripPrefix(base, h))
	return mux, nil
}

// connectUIURL is where connect links point (see connect.Config.ConnectUIURL).
func connectUIURL(cfg connect.Config) string {
	if cfg.ConnectUIURL != "" {
		return cfg.ConnectUIURL
	}
	return strings.TrimRight(cfg.PublicURL, "/") + "/connect/"
}

// encryptionKeys reads the primary key from CONNECT_ENCRYPTION_KEY or the
// file CONNECT_ENCRYPTION_KEY_FILE names, or else from dataKey (the key
// file of the data directory; nil: a key is required), and
// CONNECT_PREVIOUS_ENCRYPTION_KEYS (comma-separated, still able to open old
// values). Each is base64 of 32 bytes. source says where the primary came
// from, for the log. Key ids derive from the key material
// (connect.EncryptionKeyID, as connect.ParseEncryptionKey sets them), so
// they are stable across restarts, differ between keys, and are those of an
// application that embeds the library with the same key: a secret sealed
// under another key is reported as such, never opened with the wrong one.
func encryptionKeys(getenv func(string) string, dataKey func() (key, path string, err error)) (keys []connect.EncryptionKey, source string, err error) {
	primary, name := getenv("CONNECT_ENCRYPTION_KEY"), "CONNECT_ENCRYPTION_KEY"
	source = name
	if path := getenv("CONNECT_ENCRYPTION_KEY_FILE"); path != "" {
		if primary != "" {
			return nil, "", errors.New("set CONNECT_ENCRYPTION_KEY or CONNECT_ENCRYPTION_KEY_FILE, not both")
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, "", fmt.Errorf("CONNECT_ENCRYPTION_KEY_FILE: %w", err)
		}
		primary, name, source = string(b), "CONNECT_ENCRYPTION_KEY_FILE "+path, path
	}
	if primary == "" {
		if dataKey == nil {
			return nil, "", errors.New("CONNECT_ENCRYPTION_KEY or CONNECT_ENCRYPTION_KEY_FILE is required with a Postgres DATABASE_URL: generate a key once " +
				"(openssl rand -base64 32 > connect.key), keep it, and start with CONNECT_ENCRYPTION_KEY_FILE=connect.key every time")
		}
		var path string
		if primary, path, err = dataKey(); err != nil {
			return nil, "", err
		}
		name, source = "the encryption key "+path, path
	}
	for i, v := range append([]string{primary}, splitList(getenv("CONNECT_PREVIOUS_ENCRYPTION_KEYS"))...) {
		k, err := connect.ParseEncryptionKey(v)
		if err != nil {
			if i > 0 {
				name = fmt.Sprintf("CONNECT_PREVIOUS_ENCRYPTION_KEYS[%d]", i-1)
			}
			return nil, "", fmt.Errorf("%s: %w", name, err)
		}
		keys = append(keys, k)
	}
	return keys, source, nil
}

// missingKeysHelp adds to an error of CheckEncryptionKeys what an operator
// of this server can do about it.
func missingKeysHelp(err error, keys []connect.EncryptionKey) error {
	var mk *connect.MissingKeysError
	if !errors.As(err, &mk) {
		return err
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.ID
	}
	return fmt.Errorf("%w. This server's key ids are %s. Start it with the key the data was sealed with "+
		"(CONNECT_ENCRYPTION_KEY_FILE or CONNECT_ENCRYPTION_KEY), or add that key to CONNECT_PREVIOUS_ENCRYPTION_KEYS to re-encrypt "+
		"the data under a new one; a key's id is \"k\" and the first 8 hex digits of the SHA-256 of its 32 bytes "+
		"(base64 -d < connect.key | sha256sum)", err, strings.Join(ids, ", "))
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// devWebhooks is the webhook configuration of the dev environment from
// CONNECT_WEBHOOK_URLS and CONNECT_WEBHOOK_SIGNING_KEY; nil fields are left
// as they are.
type devWebhooks struct {
	urls *[]string
	key  *string
}

// retrySchedule reads CONNECT_WEBHOOK_RETRY_SCHEDULE: the waits before the
// slow retries of a webhook delivery, comma-separated Go durations (such
// as "1m,10m,1h"), or "none" for the fast retries alone (a delivery the
// receiver refuses is then failed within a second). Empty keeps the
// default schedule (about 26 hours).
func retrySchedule(v string) ([]time.Duration, error) {
	switch strings.TrimSpace(v) {
	case "":
		return nil, nil
	case "none":
		return []time.Duration{}, nil
	}
	var out []time.Duration
	for _, part := range splitList(v) {
		d, err := time.ParseDuration(part)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("CONNECT_WEBHOOK_RETRY_SCHEDULE: %q is not a positive duration such as 10m (or give none)", part)
		}
		out = append(out, d)
	}
	if len(out) > 100 {
		return nil, errors.New("CONNECT_WEBHOOK_RETRY_SCHEDULE: at most 100 waits")
	}
	return out, nil
}

// webhookSettings reads and validates CONNECT_WEBHOOK_URLS (comma-separated,
// at most two absolute http(s) URLs) and CONNECT_WEBHOOK_SIGNING_KEY (at
// least 16 characters).
func webhookSettings(getenv func(string) string) (devWebhooks, error) {
	var h devWebhooks
	if v := getenv("CONNECT_WEBHOOK_URLS"); v != "" {
		urls := splitList(v)
		if len(urls) > environments.MaxWebhookURLs {
			return h, fmt.Errorf("CONNECT_WEBHOOK_URLS has %d URLs; at most %d", len(urls), environments.MaxWebhookURLs)
		}
		for _, u := range urls {
			p, err := url.Parse(u)
			if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
				return h, fmt.Errorf("CONNECT_WEBHOOK_URLS: %q is not an absolute http or https URL", u)
			}
		}
		if err := environments.ValidateWebhookURLs(urls); err != nil {
			return h, fmt.Errorf("CONNECT_WEBHOOK_URLS: %w", err)
		}
		h.urls = &urls
	}
	if v := getenv("CONNECT_WEBHOOK_SIGNING_KEY"); v != "" {
		if len(v) < 16 {
			return h, errors.New("CONNECT_WEBHOOK_SIGNING_KEY must be at least 16 characters")
		}
		h.key = &v
	}
	return h, nil
}

// setupDev makes the dev environment exist, with CONNECT_API_KEY among its
// API keys (environments.Service.Ensure, as an application embedding the
// library does at every start: the same database serves both), and applies
// the webhook settings. Without CONNECT_API_KEY, a new environment gets a
// generated key, printed once.
func setupDev(ctx context.Context, svc *connect.Service, logger *slog.Logger, getenv func(string) string, hooks devWebhooks) error {
	envs := svc.Environments()
	var key *environments.NewAPIKey
	if secret := getenv("CONNECT_API_KEY"); secret != "" {
		key = &environments.NewAPIKey{Name: "default", Secret: secret, Scopes: []string{environments.ScopeAll}}
	}
	res, err := envs.Ensure(ctx, environments.CreateInput{Name: "dev"}, key)
	if err != nil {
		if key != nil {
			return fmt.Errorf("dev environment with CONNECT_API_KEY: %w", err)
		}
		return fmt.Errorf("dev environment: %w", err)
	}
	env := res.Environment
	if hooks.urls != nil || hooks.key != nil {
		if env, err = envs.Update(ctx, env.ID, environments.UpdateInput{WebhookURLs: hooks.urls, WebhookSigningKey: hooks.key}); err != nil {
			if hooks.urls != nil {
				return fmt.Errorf("CONNECT_WEBHOOK_URLS: %w", err)
			}
			return fmt.Errorf("dev environment webhooks: %w", err)
		}
		logger.Info("dev environment webhooks configured", "urls", len(env.WebhookURLs), "signing_key_set", hooks.key != nil)
	}
	if key == nil {
		// Generate a key only for an environment without keys: on a
		// restart against the same database the key printed the first
		// time still works.
		existing, err := envs.ListAPIKeys(ctx, env.ID)
		if err != nil {
			return err
		}
		if len(existing) > 0 {
			logger.Info("dev environment has API keys already; set CONNECT_API_KEY to add a known one", "keys", len(existing))
			return setVariables(ctx, svc, env.ID, getenv)
		}
		raw, _, err := envs.CreateAPIKey(ctx, env.ID, environments.NewAPIKey{Name: "default", Scopes: []string{environments.ScopeAll}})
		if err != nil {
			return fmt.Errorf("dev environment API key: %w", err)
		}
		fmt.Fprintf(os.Stderr, "\n  API key of the dev environment (shown once): %s\n\n", raw)
	}
	logger.Info("dev environment ready", "environment", env.Name, "created", res.CreatedEnvironment,
		"api_key_added", res.CreatedAPIKey)
	return setVariables(ctx, svc, env.ID, getenv)
}

// setVariables sets the dev environment's variables from CONNECT_DEV_ENV_VARS.
func setVariables(ctx context.Context, svc *connect.Service, envID int64, getenv func(string) string) error {
	v := getenv("CONNECT_DEV_ENV_VARS")
	if v == "" {
		return nil
	}
	var vars map[string]string
	if err := json.Unmarshal([]byte(v), &vars); err != nil {
		return fmt.Errorf("CONNECT_DEV_ENV_VARS must be a JSON object of strings: %w", err)
	}
	if err := svc.Environments().SetVariables(ctx, envID, vars); err != nil {
		return fmt.Errorf("CONNECT_DEV_ENV_VARS: %w", err)
	}
	return nil
}
