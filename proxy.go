package connect

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/cache"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/proxy"
	"github.com/embedauth/connect/store"
)

// Defaults of the proxy's connection cache.
const (
	// DefaultProxyCacheTTL is the default of Config.ProxyCacheTTL.
	DefaultProxyCacheTTL = 5 * time.Second
	// DefaultProxyCacheMaxAge is the default of Config.ProxyCacheMaxAge.
	DefaultProxyCacheMaxAge = 5 * time.Minute
	// DefaultProxyCacheEntries is the default of Config.ProxyCacheEntries.
	DefaultProxyCacheEntries = 100000
	// DefaultChangePollInterval is the default of
	// Config.ChangePollInterval.
	DefaultChangePollInterval = time.Second
)

func (s *Service) setupProxy() error {
	pc := s.cfg.Proxy
	pc.Logger = s.logger
	pc.Now = s.cfg.Now
	pc.Source = proxy.SourceFunc(s.proxyTarget)
	p, err := proxy.New(pc)
	if err != nil {
		return err
	}
	s.proxy = p
	return nil
}

// ProxyHandler serves the proxy route, /proxy/{endpoint...}, for GET, POST,
// PUT, PATCH, DELETE, PROPFIND and REPORT, authenticated with an API key
// holding the environment:proxy scope: the connection named by the
// Connection-Id and Provider-Config-Key headers is called with its
// credentials, and the upstream's answer comes back unchanged. See package
// proxy for the headers and the rules. Handler includes it.
func (s *Service) ProxyHandler() http.Handler {
	mux := http.NewServeMux()
	s.registerProxy(mux)
	return s.edge(mux)
}

func (s *Service) registerProxy(mux *http.ServeMux) {
	s.proxyRoutes(&httpapi.Router{Mux: mux, Authenticate: s.authenticate, Limiter: s.limiter, Logger: s.logger})
}

// proxyRoutes registers the proxy's routes on rt.
func (s *Service) proxyRoutes(rt *httpapi.Router) {
	mux := rt.Mux
	for _, m := range proxy.Methods() {
		rt.Handle(httpapi.Route{
			Pattern: m + " /proxy/{endpoint...}",
			Scope:   environments.ScopeProxy,
			RawBody: true,
			Handler: func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
				s.proxy.ServeHTTP(w, r, p.EnvironmentID)
				return nil
			},
		})
	}
	mux.HandleFunc("/proxy/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", strings.Join(proxy.Methods(), ", "))
		httpapi.WriteError(w, r, nil, httpapi.StyleStandard, httpapi.WithStatus(http.StatusMethodNotAllowed,
			store.Invalid("method_not_allowed", "The proxy serves "+strings.Join(proxy.Methods(), ", ")+".")))
	})
}

// Proxy calls a connection's API from Go, as the proxy route does: the
// request goes to the provider's base URL (or req.BaseURLOverride) plus
// req.Endpoint with the connection's credentials, retries and address
// policy; the upstream's response is returned streamed and unchanged (the
// caller closes its body). The proxy's own failures are *store.Error
// values; proxy.HTTPStatus gives the status the route would answer.
func (s *Service) Proxy(ctx context.Context, req *proxy.Request) (*http.Response, error) {
	return s.proxy.Do(ctx, req)
}

// ProxyClient returns an *http.Client bound to one connection, to hand to
// a provider's Go SDK: every request to the connection's base URL (the
// provider's, or opts.BaseURLOverride) carries the connection's current
// credentials, refreshed when about to expire and once more after a 401.
// Requests to other hosts carry none.
func (s *Service) ProxyClient(environmentID int64, integrationKey, connectionID string, opts proxy.Options) *http.Client {
	return s.proxy.Client(environmentID, integrationKey, connectionID, opts)
}

// proxyTarget is the proxy's Source: the connection with fresh
// credentials (Connections().Get refreshes a token about to expire),
// remembered for Config.ProxyCacheTTL unless forced. The cache is
// single-flight per connection (concurrent calls to a connection that is
// not cached read it once) and refreshes a connection in use in the
// background during the last quarter of its TTL; see internal/cache.
func (s *Service) proxyTarget(ctx context.Context, envID int64, key, id string, force bool) (*proxy.Target, error) {
	k := proxyKey{envID, key, id}
	if !force {
		pk, err := s.proxyCache.Get(ctx, k)
		if err != nil {
			return nil, err
		}
		return pk.Target(), nil
	}
	start := s.cfg.Now()
	pk, err := s.loadTarget(ctx, k, true)
	if err != nil {
		return nil, err
	}
	s.proxyCache.Set(k, pk, start)
	return pk.Target(), nil
}

// loadTarget reads the connection of k, refreshing its token when due (or
// whenever it can be, with force), and the integration's client when calls
// need it.
func (s *Service) loadTarget(ctx context.Context, k proxyKey, force bool) (proxy.Packed, error) {
	c, err := s.connections.Get(ctx, k.env, k.key, k.id, connections.GetOptions{ForceRefresh: force})
	if err != nil {
		return proxy.Packed{}, err
	}
	p, ok := s.cfg.Providers.Get(c.Provider)
	if !ok {
		return proxy.Packed{}, store.Invalid("unknown_provider", "The provider "+c.Provider+" of the connection is not in the catalogue.")
	}
	t := &proxy.Target{Connection: c, Provider: p}
	if needsClient(p, c) {
		it, err := s.integrations.Get(ctx, k.env, k.key)
		if err != nil {
			return proxy.Packed{}, err
		}
		if it.Credentials != nil {
			t.ClientID, t.ClientSecret = it.Credentials.ClientID, it.Credentials.ClientSecret
			if p.AuthMode == integrations.AuthModeOAuth1 && strings.EqualFold(p.SignatureMethod, "RSA-SHA1") {
				t.PrivateKey = it.Credentials.PrivateKey
			}
		}
	}
	// The cache keeps the packed form: what calls inject, computed now,
	// without the parts of the connection they no longer read, in memory
	// the garbage collector does not scan.
	return s.proxy.Pack(t), nil
}

// refreshThreshold is how long before expiry a provider's tokens are
// refreshed (see Config.RefreshThreshold).
func (s *Service) refreshThreshold(p *integrations.Provider) time.Duration {
	if p.TokenExpirationBuffer > 0 {
		return time.Duration(p.TokenExpirationBuffer) * time.Second
	}
	if s.cfg.RefreshThreshold > 0 {
		return s.cfg.RefreshThreshold
	}
	return connections.DefaultRefreshThreshold
}

// needsClient reports whether calls need the integration's OAuth client:
// OAuth 1 and TBA sign with it, and templates may use it.
func needsClient(p *integrations.Provider, c *connections.Connection) bool {
	if c.AuthMode == integrations.AuthModeOAuth1 || c.AuthMode == integrations.AuthModeTBA {
		return true
	}
	if p.Proxy == nil {
		return false
	}
	uses := func(tmpl string) bool {
		names, _ := integrations.Placeholders(tmpl)
		for _, n := range names {
			if n == "clientId" || n == "clientSecret" {
				return true
			}
		}
		return false
	}
	if uses(p.Proxy.BaseURL) {
		return true
	}
	for _, m := range []map[string]string{p.Proxy.Headers, p.Proxy.Query} {
		for _, v := range m {
			if uses(v) {
				return true
			}
		}
	}
	return false
}

// newProxyCache builds the proxy's connection cache: entries live
// Config.ProxyCacheTTL (DefaultProxyCacheTTL by default, none when
// negative), an entry whose token is due for refresh
// (connections.RefreshDue) is never served, a refresh that finds the
// connection gone drops it, and at most Config.ProxyCacheEntries are kept.
// While a started Service follows the Store's change feed, the TTL is
// Config.ProxyCacheMaxAge (see watchChanges).
func (s *Service) newProxyCache() *cache.Cache[proxyKey, proxy.Packed] {
	ttl := s.cfg.ProxyCacheTTL
	if ttl == 0 {
		ttl = DefaultProxyCacheTTL
	}
	return cache.New(cache.Config[proxyKey, proxy.Packed]{
		Load: func(ctx context.Context, k proxyKey) (proxy.Packed, error) { return s.loadTarget(ctx, k, false) },
		TTL:  ttl,
		// Due by the rule of reads (a token that lives shorter than the
		// threshold stays usable until half of it is used).
		Fresh: func(pk proxy.Packed, now time.Time) bool {
			return pk.Fresh(now, s.refreshThreshold(pk.Provider()))
		},
		Gone: func(err error) bool { return errors.Is(err, store.ErrNotFound) },
		RefreshFailed: func(k proxyKey, err error) {
			s.logger.Warn("proxy: refreshing a cached connection failed; its cached copy serves until it expires",
				"environment_id", k.env, "integration", k.key, "connection_id", k.id, "err", err)
		},
		MaxEntries: s.cfg.ProxyCacheEntries,
		Now:        s.cfg.Now,
	})
}

// dropAfterChange runs drop now and, when ctx is inside a transaction of a
// Store that supports it, again once it commits: a call that read the
// record between the two, before the commit, cached what the commit
// replaced.
func dropAfterChange(ctx context.Context, st any, drop func()) {
	drop()
	if h, ok := st.(store.CommitHooker); ok {
		h.AfterCommit(ctx, drop)
	}
}

// proxyCacheInvalidator is the connections Store of the Service: every
// creation, update or deletion of a connection through this Service
// (refresh, re-authorization, import, metadata, deletion) drops the proxy's
// cached copy.
type proxyCacheInvalidator struct {
	connections.Store
	cache *cache.Cache[proxyKey, proxy.Packed]
}

func (s proxyCacheInvalidator) CreateConnection(ctx context.Context, c *connections.Connection) error {
	err := s.Store.CreateConnection(ctx, c)
	k := proxyKey{c.EnvironmentID, c.IntegrationKey, c.ConnectionID}
	dropAfterChange(ctx, s.Store, func() { s.cache.Delete(k) })
	return err
}

func (s proxyCacheInvalidator) UpdateConnection(ctx context.Context, c *connections.Connection) error {
	err := s.Store.UpdateConnection(ctx, c)
	k := proxyKey{c.EnvironmentID, c.IntegrationKey, c.ConnectionID}
	dropAfterChange(ctx, s.Store, func() { s.cache.Delete(k) })
	return err
}

func (s proxyCacheInvalidator) ImportConnections(ctx context.Context, items []*connections.ImportItem) error {
	err := s.Store.ImportConnections(ctx, items)
	keys := make([]proxyKey, len(items))
	for i, it := range items {
		c := it.Connection
		keys[i] = proxyKey{c.EnvironmentID, c.IntegrationKey, c.ConnectionID}
	}
	dropAfterChange(ctx, s.Store, func() {
		for _, k := range keys {
			s.cache.Delete(k)
		}
	})
	return err
}

func (s proxyCacheInvalidator) DeleteConnection(ctx context.Context, environmentID int64, integrationKey, connectionID string) error {
	err := s.Store.DeleteConnection(ctx, environmentID, integrationKey, connectionID)
	k := proxyKey{environmentID, integrationKey, connectionID}
	dropAfterChange(ctx, s.Store, func() { s.cache.Delete(k) })
	return err
}

// integrationCacheInvalidator is the integrations Store of the Service: an
// integration updated (its client credentials, which OAuth 1 signs with)
// or deleted (with its connections) through this Service drops the proxy's
// cached connections of that integration.
type integrationCacheInvalidator struct {
	integrations.Store
	cache *cache.Cache[proxyKey, proxy.Packed]
	// deleted, when set, is told of a deleted integration (the functions
	// deployed to it are deleted with it).
	deleted func(env int64, key string)
}

func (s integrationCacheInvalidator) UpdateIntegration(ctx context.Context, in *integrations.Integration) error {
	// An integration with connections cannot be renamed: its key is the
	// key of its cached connections.
	err := s.Store.UpdateIntegration(ctx, in)
	env, key := in.EnvironmentID, in.UniqueKey
	dropAfterChange(ctx, s.Store, func() {
		s.cache.DeleteFunc(func(k proxyKey, _ proxy.Packed) bool { return k.env == env && k.key == key })
	})
	return err
}

func (s integrationCacheInvalidator) DeleteIntegration(ctx context.Context, environmentID int64, uniqueKey string) error {
	err := s.Store.DeleteIntegration(ctx, environmentID, uniqueKey)
	dropAfterChange(ctx, s.Store, func() {
		s.cache.DeleteFunc(func(k proxyKey, _ proxy.Packed) bool { return k.env == environmentID && k.key == uniqueKey })
		if s.deleted != nil {
			s.deleted(environmentID, uniqueKey)
		}
	})
	return err
}

type proxyKey struct {
	env     int64
	key, id string
}
