package httpapi

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/embedauth/connect/ratelimit"
	"github.com/embedauth/connect/store"
)

// ScopeAll grants every scope.
const ScopeAll = "environment:*"

// Principal is the authenticated caller of an API request.
type Principal struct {
	EnvironmentID int64
	// Environment is the environment's name.
	Environment string
	// Account groups environments for rate limiting.
	Account string
	// KeyID is the id of the API key used.
	KeyID  int64
	Scopes []string
}

// Allows reports whether the principal holds scope.
func (p *Principal) Allows(scope string) bool {
	return slices.Contains(p.Scopes, ScopeAll) || slices.Contains(p.Scopes, scope)
}

// Authenticator resolves the API key of a request (the bearer token) to a
// principal. It returns an ErrUnauthorized error for an unknown key.
type Authenticator func(ctx context.Context, key string) (*Principal, error)

// HandlerFunc serves one route. It writes a success response itself and
// returns errors for the Router to write.
type HandlerFunc func(w http.ResponseWriter, r *http.Request, p *Principal) error

// Router mounts API-key routes on a ServeMux.
type Router struct {
	Mux          *http.ServeMux
	Authenticate Authenticator
	// Limiter, when set, limits requests per principal account.
	Limiter ratelimit.Limiter
	Logger  *slog.Logger
	// MaxBody limits request bodies; 0 means DefaultMaxBody.
	MaxBody int64
}

// Route describes one API route.
type Route struct {
	// Pattern is a ServeMux pattern such as "GET /integrations/{key}".
	Pattern string
	// Scope is the scope the API key must hold.
	Scope string
	// AnyScope admits every authenticated key, whatever its scopes, for
	// a route whose handler checks a scope per operation (Scope is then
	// ignored). A route without Scope and without AnyScope admits only
	// ScopeAll.
	AnyScope bool
	// Style is the error body shape.
	Style Style
	// RawBody: the handler reads the body as it is (any Content-Type, no
	// MaxBody limit), as the proxy route does.
	RawBody bool
	// MaxBody, when positive, replaces the Router's MaxBody for this
	// route: the largest body it reads.
	MaxBody int64
	Handler HandlerFunc
}

// Handle registers the route.
func (rt *Router) Handle(route Route) {
	rt.Mux.Handle(route.Pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := rt.serve(w, r, route); err != nil {
			WriteError(w, r, rt.Logger, route.Style, err)
		}
	}))
}

func (rt *Router) serve(w http.ResponseWriter, r *http.Request, route Route) error {
	p, err := rt.authenticate(r)
	if err != nil {
		return err
	}
	if rt.Limiter != nil {
		d, err := rt.Limiter.Allow(r.Context(), p.Account)
		if err != nil {
			if rt.Logger != nil {
				rt.Logger.WarnContext(r.Context(), "rate limiter failed; request allowed", "err", err)
			}
		} else if !d.Allowed {
			secs := int(math.Ceil(d.RetryAfter.Seconds()))
			if secs < 1 {
				secs = 1
			}
			return &retryAfterError{seconds: secs, err: store.Errorf(store.ErrRateLimited, "too_many_requests",
				"Rate limit exceeded; retry after %d seconds.", secs)}
		}
	}
	if !route.AnyScope && !p.Allows(route.Scope) {
		return store.Errorf(store.ErrForbidden, "forbidden", "The API key lacks the scope %s.", route.Scope)
	}
	if route.RawBody {
		return route.Handler(w, r, p)
	}
	if hasBody(r) {
		if err := CheckContentType(r); err != nil {
			return err
		}
	}
	max := rt.BodyLimit()
	if route.MaxBody > 0 {
		max = route.MaxBody
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, max)
	}
	return route.Handler(w, r, p)
}

// BodyLimit returns the limit of request bodies of the routes that do
// not set their own: MaxBody, or DefaultMaxBody when it is not positive.
func (rt *Router) BodyLimit() int64 {
	if rt.MaxBody <= 0 {
		return DefaultMaxBody
	}
	return rt.MaxBody
}

func hasBody(r *http.Request) bool {
	return r.ContentLength > 0 || len(r.TransferEncoding) > 0
}

func (rt *Router) authenticate(r *http.Request) (*Principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, store.Errorf(store.ErrUnauthorized, "missing_auth_header", "Authentication failed: the request has no Authorization header.")
	}
	scheme, token, ok := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return nil, store.Errorf(store.ErrUnauthorized, "malformed_auth_header", "Authentication failed: the Authorization header must be 'Bearer <API key>'.")
	}
	return rt.Authenticate(r.Context(), token)
}
