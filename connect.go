package connect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/internal/secret"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/ratelimit"
)

// EncryptionKey is one key of the keyring that seals secrets at rest.
type EncryptionKey struct {
	// ID names the key inside sealed values (1 to 32 letters, digits, '-'
	// or '_'). It must never be reused for different key material.
	ID string
	// Key is 32 random bytes.
	Key []byte
}

// Config configures a Service. Store and EncryptionKeys are required; every
// other field has a documented default.
type Config struct {
	// Store holds all state. Required: store/memory or store/postgres.
	Store Store

	// EncryptionKeys seal credentials, client secrets, signing keys and
	// environment variable values with AES-256-GCM. The first key is the
	// primary: new values are sealed with it; the others only open old
	// values until ReencryptSecrets has re-sealed them. Required.
	EncryptionKeys []EncryptionKey

	// Providers is the provider catalogue. Defaults to
	// integrations.DefaultCatalog(), the embedded catalogue.
	Providers *integrations.Catalog

	// PublicURL is the external base URL of the API, such as
	// "https://connect.example.com/api". It is used to build absolute URLs
	// (incoming webhook URLs). Optional; when empty those URLs are
	// relative paths.
	PublicURL string

	// RateLimitRequests is the number of requests an account may make per
	// RateLimitWindow. Defaults to 3000; negative disables rate limiting.
	RateLimitRequests int
	// RateLimitWindow is the length of the fixed rate-limit window.
	// Defaults to one minute.
	RateLimitWindow time.Duration
	// RateLimiter replaces the in-process limiter built from
	// RateLimitRequests and RateLimitWindow, so that several instances can
	// share one limit (see postgres.NewRateLimiter).
	RateLimiter ratelimit.Limiter

	// APIKeyCacheTTL is how long an authenticated API key is remembered in
	// process. A key revoked by another instance keeps working here for at
	// most this long. Defaults to 10 seconds; negative disables the cache.
	APIKeyCacheTTL time.Duration

	// MaxRequestBody limits API request bodies. Defaults to 1 MiB.
	MaxRequestBody int64

	// Logger receives operational logs. Defaults to discarding them.
	Logger *slog.Logger

	// Now returns the current time. Defaults to time.Now; tests set it.
	Now func() time.Time
}

// Errors returned by New for a missing or wrong part of Config.
var (
	ErrMissingStore         = errors.New("connect: Config.Store is required")
	ErrMissingEncryptionKey = errors.New("connect: Config.EncryptionKeys needs at least one key")
)

// Service holds end users' authorization for external APIs and serves the
// API over it. Create it with New; it is safe for concurrent use.
type Service struct {
	cfg     Config
	store   Store
	keyring *secret.Keyring
	logger  *slog.Logger
	limiter ratelimit.Limiter
	log     *oplog.Writer

	environments *environments.Service
	integrations *integrations.Service
	connections  *connections.Service

	mu      sync.Mutex
	started bool
}

// New validates cfg and builds a Service. It does not touch the database:
// migrate it first (postgres.Migrate).
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, ErrMissingStore
	}
	if len(cfg.EncryptionKeys) == 0 {
		return nil, ErrMissingEncryptionKey
	}
	keys := make([]secret.Key, len(cfg.EncryptionKeys))
	for i, k := range cfg.EncryptionKeys {
		keys[i] = secret.Key{ID: k.ID, Secret: k.Key}
	}
	keyring, err := secret.NewKeyring(keys...)
	if err != nil {
		return nil, fmt.Errorf("connect: Config.EncryptionKeys: %w", err)
	}
	if cfg.PublicURL != "" {
		u, err := url.Parse(cfg.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("connect: Config.PublicURL %q must be an absolute http or https URL", cfg.PublicURL)
		}
		cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RateLimitWindow < 0 {
		return nil, errors.New("connect: Config.RateLimitWindow must not be negative")
	}
	if cfg.RateLimitWindow == 0 {
		cfg.RateLimitWindow = time.Minute
	}
	if cfg.RateLimitRequests == 0 {
		cfg.RateLimitRequests = 3000
	}
	if cfg.APIKeyCacheTTL == 0 {
		cfg.APIKeyCacheTTL = 10 * time.Second
	}
	if cfg.MaxRequestBody < 0 {
		return nil, errors.New("connect: Config.MaxRequestBody must not be negative")
	}
	if cfg.MaxRequestBody == 0 {
		cfg.MaxRequestBody = httpapi.DefaultMaxBody
	}
	if cfg.Providers == nil {
		cat, err := integrations.DefaultCatalog()
		if err != nil {
			return nil, fmt.Errorf("connect: embedded provider catalogue: %w", err)
		}
		cfg.Providers = cat
	}
	s := &Service{cfg: cfg, store: cfg.Store, keyring: keyring, logger: cfg.Logger}
	switch {
	case cfg.RateLimiter != nil:
		s.limiter = cfg.RateLimiter
	case cfg.RateLimitRequests > 0:
		s.limiter = ratelimit.NewFixedWindow(cfg.RateLimitRequests, cfg.RateLimitWindow, cfg.Now)
	}
	s.log = &oplog.Writer{Store: cfg.Store, Now: cfg.Now}
	ttl := cfg.APIKeyCacheTTL
	if ttl < 0 {
		ttl = 0
	}
	s.environments = environments.NewService(cfg.Store, keyring, cfg.Now, ttl)
	s.integrations = integrations.NewService(cfg.Store, cfg.Store, cfg.Providers, keyring, s.log, cfg.Now)
	s.connections = connections.NewService(cfg.Store, cfg.Store, cfg.Providers, keyring, s.log, cfg.Now)
	return s, nil
}

// Environments manages environments, API keys and variables.
func (s *Service) Environments() *environments.Service { return s.environments }

// Integrations manages integrations and the provider catalogue.
func (s *Service) Integrations() *integrations.Service { return s.integrations }

// Connections manages connections.
func (s *Service) Connections() *connections.Service { return s.connections }

// ListLogs lists operations log entries, newest first.
func (s *Service) ListLogs(ctx context.Context, f oplog.Filter) ([]*oplog.Entry, error) {
	return s.log.List(ctx, f)
}

// Start starts background work. It returns at once; Stop ends the work.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("connect: Service already started")
	}
	s.started = true
	return nil
}

// Stop stops background work, waiting for it within ctx's deadline.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = false
	return nil
}

// ReencryptSecrets re-seals, under the primary encryption key, every secret
// still sealed with another key: signing keys, environment variables,
// integration credentials and connection credentials. It returns how many
// values it re-sealed. After it returns without error, older keys can be
// removed from Config.EncryptionKeys.
func (s *Service) ReencryptSecrets(ctx context.Context) (int, error) {
	n, err := s.environments.Reseal(ctx)
	if err != nil {
		return n, err
	}
	envs, err := s.environments.List(ctx)
	if err != nil {
		return n, err
	}
	for _, env := range envs {
		k, err := s.integrations.Reseal(ctx, env.ID)
		n += k
		if err != nil {
			return n, err
		}
		k, err = s.connections.Reseal(ctx, env.ID)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// APIHandler serves the API-key routes: providers, integrations,
// connections and environment variables. Mount it at the root of a mux, or
// under a prefix with http.StripPrefix.
func (s *Service) APIHandler() http.Handler {
	mux := http.NewServeMux()
	s.registerAPI(mux)
	return mux
}

// Handler serves every route of the service: the API-key routes of
// APIHandler and the unauthenticated GET /health and
// GET /providers/{provider}/logo.svg.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	s.registerAPI(mux)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteJSON(w, http.StatusOK, map[string]string{"result": "ok"})
	})
	mux.Handle("GET /providers/{provider}/logo.svg", s.integrations.LogoHandler())
	return mux
}

func (s *Service) registerAPI(mux *http.ServeMux) {
	rt := &httpapi.Router{
		Mux:          mux,
		Authenticate: s.environments.Authenticate,
		Limiter:      s.limiter,
		Logger:       s.logger,
		MaxBody:      s.cfg.MaxRequestBody,
	}
	s.integrations.Routes(rt, s.cfg.PublicURL)
	s.connections.Routes(rt)
	s.environments.Routes(rt)
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteError(w, r, s.logger, httpapi.StyleStandard, notFoundRoute(r))
	}))
}
