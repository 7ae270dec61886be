package connect

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/proxy"
	"github.com/embedauth/connect/store"
)

// DefaultProxyCacheTTL is the default of Config.ProxyCacheTTL.
const DefaultProxyCacheTTL = 5 * time.Second

// maxProxyCacheEntries bounds the proxy's connection cache.
const maxProxyCacheEntries = 10000

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
	rt := &httpapi.Router{Mux: mux, Authenticate: s.authenticate, Limiter: s.limiter, Logger: s.logger}
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
// remembered for Config.ProxyCacheTTL unless forced.
func (s *Service) proxyTarget(ctx context.Context, envID int64, key, id string, force bool) (*proxy.Target, error) {
	k := proxyKey{envID, key, id}
	if !force {
		if t := s.proxyCache.get(k, s.cfg.Now(), s.refreshThreshold); t != nil {
			return t, nil
		}
	}
	c, err := s.connections.Get(ctx, envID, key, id, connections.GetOptions{ForceRefresh: force})
	if err != nil {
		return nil, err
	}
	p, ok := s.cfg.Providers.Get(c.Provider)
	if !ok {
		return nil, store.Invalid("unknown_provider", "The provider "+c.Provider+" of the connection is not in the catalogue.")
	}
	t := &proxy.Target{Connection: c, Provider: p}
	if needsClient(p, c) {
		it, err := s.integrations.Get(ctx, envID, key)
		if err != nil {
			return nil, err
		}
		if it.Credentials != nil {
			t.ClientID, t.ClientSecret = it.Credentials.ClientID, it.Credentials.ClientSecret
			if p.AuthMode == integrations.AuthModeOAuth1 && strings.EqualFold(p.SignatureMethod, "RSA-SHA1") {
				t.PrivateKey = it.Credentials.PrivateKey
			}
		}
	}
	s.proxyCache.put(k, t, s.cfg.Now())
	return t, nil
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

func newProxyCache(ttl time.Duration) *proxyCache {
	if ttl == 0 {
		ttl = DefaultProxyCacheTTL
	}
	return &proxyCache{ttl: ttl, m: map[proxyKey]proxyEntry{}}
}

// proxyCacheInvalidator is the connections Store of the Service: every
// update or deletion of a connection through this Service (refresh,
// re-authorization, import, metadata, deletion) drops the proxy's cached
// copy.
type proxyCacheInvalidator struct {
	connections.Store
	cache *proxyCache
}

func (s proxyCacheInvalidator) UpdateConnection(ctx context.Context, c *connections.Connection) error {
	err := s.Store.UpdateConnection(ctx, c)
	s.cache.drop(proxyKey{c.EnvironmentID, c.IntegrationKey, c.ConnectionID})
	return err
}

func (s proxyCacheInvalidator) ImportConnections(ctx context.Context, items []*connections.ImportItem) error {
	err := s.Store.ImportConnections(ctx, items)
	for _, it := range items {
		c := it.Connection
		s.cache.drop(proxyKey{c.EnvironmentID, c.IntegrationKey, c.ConnectionID})
	}
	return err
}

func (s proxyCacheInvalidator) DeleteConnection(ctx context.Context, environmentID int64, integrationKey, connectionID string) error {
	err := s.Store.DeleteConnection(ctx, environmentID, integrationKey, connectionID)
	s.cache.drop(proxyKey{environmentID, integrationKey, connectionID})
	return err
}

type proxyKey struct {
	env     int64
	key, id string
}

type proxyEntry struct {
	t  *proxy.Target
	at time.Time
}

// proxyCache remembers targets for a short time, so that a burst of calls
// to one connection reads it from the Store once. An entry whose token is
// due for refresh (connections.RefreshDue) is not used.
type proxyCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[proxyKey]proxyEntry
}

func (pc *proxyCache) get(k proxyKey, now time.Time, threshold func(*integrations.Provider) time.Duration) *proxy.Target {
	if pc.ttl <= 0 {
		return nil
	}
	pc.mu.Lock()
	e, ok := pc.m[k]
	pc.mu.Unlock()
	if !ok || !now.Before(e.at.Add(pc.ttl)) {
		return nil
	}
	// Due by the rule of reads (a token that lives shorter than the
	// threshold stays usable until half of it is used).
	if connections.RefreshDue(e.t.Connection.Credentials, now, threshold(e.t.Provider)) {
		return nil
	}
	return e.t
}

func (pc *proxyCache) drop(k proxyKey) {
	pc.mu.Lock()
	delete(pc.m, k)
	pc.mu.Unlock()
}

func (pc *proxyCache) put(k proxyKey, t *proxy.Target, now time.Time) {
	if pc.ttl <= 0 {
		return
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if _, ok := pc.m[k]; !ok && len(pc.m) >= maxProxyCacheEntries {
		for old := range pc.m {
			delete(pc.m, old)
			break
		}
	}
	pc.m[k] = proxyEntry{t: t, at: now}
}
