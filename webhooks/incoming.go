package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/ratelimit"
	"github.com/embedauth/connect/store"
)

// IncomingPattern is the route IncomingHandler serves.
const IncomingPattern = "POST /webhook/{environment}/{integration}"

// DefaultIncomingMaxBody is the default limit of an incoming webhook body:
// 1 MiB. Providers send event notifications, JSON documents of a few KiB
// (HubSpot, which batches up to 100 events in one request, stays in the tens
// of KiB), and what a provider that does not sign sends may come from
// anyone: the limit is the most one such request can make the Service store
// per destination. GitHub documents payloads of up to 25 MB (a push of many
// commits); a host that forwards those raises the limit.
const DefaultIncomingMaxBody = 1 << 20

// DefaultForwardQuota is the default IncomingConfig.MaxForward: 256 MiB of
// forward deliveries per integration, as ForwardCharge counts them (bodies
// and rows).
const DefaultForwardQuota = 256 << 20

// forwardRetryAfter is the Retry-After of a delivery refused because the
// integration's forwards fill its quota.
const forwardRetryAfter = 60

// DefaultIncomingMaxScan is the default number of connections examined to
// route one incoming webhook when the ConnectionLister has no indexed
// lookup (see ConnectionFinder).
const DefaultIncomingMaxScan = 100_000

// incomingPageSize is the page size of the connection scan.
const incomingPageSize = 1000

// EnvironmentFinder finds an environment by name; *environments.Service
// implements it. A missing environment is an error matching
// store.ErrNotFound.
type EnvironmentFinder interface {
	GetByName(ctx context.Context, name string) (*environments.Environment, error)
}

// IntegrationGetter returns an integration with its credentials opened;
// *integrations.Service implements it. A missing integration is an error
// matching store.ErrNotFound.
type IntegrationGetter interface {
	Get(ctx context.Context, environmentID int64, key string) (*integrations.Integration, error)
}

// ProviderCatalog finds a provider by name; *integrations.Catalog
// implements it.
type ProviderCatalog interface {
	Get(name string) (*integrations.Provider, bool)
}

// RoutableConnection is what routing needs of a connection.
type RoutableConnection struct {
	ConnectionID     string
	ConnectionConfig map[string]any
}

// ConnectionLister lists an integration's connections a page at a time, in
// a stable order (by creation), for routing incoming webhooks. Over a
// connections Store it is
//
//	st.ListConnections(ctx, connections.Filter{EnvironmentID: environmentID,
//		IntegrationKeys: []string{integrationKey}, Page: store.Page{Limit: limit, Offset: offset}})
//
// mapped to RoutableConnection.
type ConnectionLister interface {
	ListRoutableConnections(ctx context.Context, environmentID int64, integrationKey string, limit, offset int) ([]RoutableConnection, error)
}

// ConnectionListerFunc adapts a function to a ConnectionLister.
type ConnectionListerFunc func(ctx context.Context, environmentID int64, integrationKey string, limit, offset int) ([]RoutableConnection, error)

// ListRoutableConnections calls f.
func (f ConnectionListerFunc) ListRoutableConnections(ctx context.Context, environmentID int64, integrationKey string, limit, offset int) ([]RoutableConnection, error) {
	return f(ctx, environmentID, integrationKey, limit, offset)
}

// ConnectionFinder is an optional interface of a ConnectionLister that can
// look connections up by a connection_config value directly (with an
// index), instead of the handler scanning the integration's connections.
// It returns the integration's connections whose connection_config[key],
// as a string (numbers in decimal), is one of values.
type ConnectionFinder interface {
	FindConnectionsByConfig(ctx context.Context, environmentID int64, integrationKey, key string, values []string) ([]RoutableConnection, error)
}

// ForwardTrimmer bounds the stored forward deliveries of an integration;
// the Pruner of every connect.Store implements it (see
// Pruner.TrimForwards).
type ForwardTrimmer interface {
	TrimForwards(ctx context.Context, environmentID int64, integrationKey string, max int64) (int64, error)
}

// LogRecorder records operations log entries; *oplog.Writer implements it.
type LogRecorder interface {
	Record(ctx context.Context, e *oplog.Entry) (string, error)
}

// RoutedWebhook is one provider webhook routed to a connection, for the
// syncs that subscribe to its type: the whole delivery, or one element of
// a delivery that is a JSON array (HubSpot's batches), each with its own
// type.
type RoutedWebhook struct {
	// ConnectionID is the connection's id.
	ConnectionID string
	// Type is the delivery's type as the provider's webhook_routing.type
	// locates it (such as "issues" or "contact.creation"); empty when the
	// provider's data names none or the delivery lacks it.
	Type string
	// Payload is the delivery's JSON body (a form body's fields, or its
	// JSON "payload" field; a body that is not JSON as a JSON string), or
	// the element of an array body.
	Payload json.RawMessage
}

// SyncRunner queues the sync runs that provider webhooks trigger: one
// webhook run for each routed webhook and each sync of the integration
// whose webhook subscriptions match its type, durably (stored with their
// jobs, in the transaction of ctx when it carries one) rather than run
// within the request. It returns how many runs it queued. connect's
// functions Service implements it (functions.Service.RunWebhookSyncs).
type SyncRunner interface {
	RunWebhookSyncs(ctx context.Context, environmentID int64, integrationKey string, webhooks []RoutedWebhook) (int, error)
}

// IncomingConfig gives the incoming webhook handler its parts.
type IncomingConfig struct {
	// Environments finds the environment named in the path. Required.
	Environments EnvironmentFinder
	// Integrations finds the integration, with its webhook secret or client
	// secret opened. Required.
	Integrations IntegrationGetter
	// Connections lists the integration's connections for routing.
	// Required.
	Connections ConnectionLister
	// Providers holds the webhook_routing data. Required.
	Providers ProviderCatalog
	// Notifier receives one forward event per matched connection, or one
	// without a connection when none matched. Required.
	Notifier Notifier
	// Syncs, when set, queues the sync runs of each delivery that a
	// signature verified and that was routed to connections (see
	// SyncRunner), whether or not the integration forwards its webhooks.
	// Deliveries that no signature verified run no function: anyone who
	// knows the URL may send those. Optional.
	Syncs SyncRunner
	// Transactor, when set, makes the forward events and the sync runs of
	// one delivery atomic: all are enqueued or none.
	Transactor store.Transactor
	// Log records one "webhook"/"incoming" entry per delivery that reached
	// an integration. Optional.
	Log LogRecorder
	// Logger receives server errors. Defaults to discarding them.
	Logger *slog.Logger
	// Limiter, when set, limits deliveries per environment account, under
	// the key "webhook:" + account (apart from the API's budget).
	Limiter ratelimit.Limiter
	// PublicURL is the service's external base URL, the one integration
	// webhook URLs are built on. Signatures that cover the URL (HubSpot)
	// are checked against PublicURL + "/webhook/{environment}/{integration}"
	// and the query; without it the URL is rebuilt from the request
	// (TLS or X-Forwarded-Proto, Host, path), which is wrong behind a proxy
	// that rewrites the path.
	PublicURL string
	// MaxBody limits the body; larger ones are answered 413 and nothing is
	// stored. Defaults to DefaultIncomingMaxBody.
	MaxBody int64
	// Forwards, when set, bounds the forward deliveries each integration
	// keeps: in the transaction that stores the forward events of a
	// delivery, Forwards.TrimForwards deletes the integration's oldest
	// delivered or failed forwards while its forwards total more than
	// MaxForward bytes, each charged its body and the cost of its row
	// (ForwardCharge). When the pending ones alone still exceed
	// it, a delivery that no signature verified is refused with 429
	// webhook_storage_full (and Retry-After) and its forwards are rolled
	// back; a verified one is stored regardless. It bounds only what the
	// Notifier stores through the Store of Forwards (the default
	// WebhookNotifier over the same Store). Requires Transactor.
	Forwards ForwardTrimmer
	// MaxForward is the bound of Forwards, in bytes per integration as
	// ForwardCharge counts them. Defaults to DefaultForwardQuota; negative
	// disables the bound.
	MaxForward int64
	// MaxScan bounds the connections examined per delivery when
	// Connections is not a ConnectionFinder. Defaults to
	// DefaultIncomingMaxScan. Connections beyond it are not matched; the
	// log entry then says truncated.
	MaxScan int
	// Now defaults to time.Now; it dates signature timestamps.
	Now func() time.Time
	// Sampler samples the log entries of deliveries that no signature
	// verified: anyone who knows an integration's URL may send those, so
	// each of their entries (accepted, challenge answered, or refused,
	// with the reason as outcome) is recorded at most once per
	// environment, integration and outcome in each of its intervals, per
	// process; the entry's meta "suppressed" counts those left out since
	// the previous one. Entries of verified deliveries are all recorded;
	// requests for an unknown environment or integration, over the rate
	// limit or over MaxBody are never recorded. Share one Sampler with the
	// Deliverer (DelivererConfig.Sampler), which samples the attempts of
	// the forwards of such deliveries, to bound what one process writes
	// for both. Defaults to a Sampler of RefusalLogInterval.
	Sampler *oplog.Sampler
	// RefusalLogInterval is the interval of the default Sampler (when
	// Sampler is nil). Its name is older than the sampling of entries
	// other than refusals. Defaults to DefaultRefusalLogInterval.
	RefusalLogInterval time.Duration
}

// DefaultRefusalLogInterval is the default IncomingConfig.RefusalLogInterval.
const DefaultRefusalLogInterval = oplog.DefaultSampleInterval

// Outcomes of an incoming delivery (the Outcome of its oplog.SampleKey):
// those of a delivery that reached routing; a refusal's outcome is its
// reason (a signature Reason, or invalid_body, invalid_challenge,
// storage_full or enqueue_failed).
const (
	outcomeAccepted  = "accepted"
	outcomeChallenge = "challenge"
)

// IncomingHandler returns the handler of POST
// /webhook/{environment}/{integration}, where providers send their webhooks.
// It is unauthenticated: the provider's signature, checked as the
// catalogue's webhook_routing data describes it, is what authenticates a
// delivery. Mount it at the root of a mux (for example for the pattern
// "/webhook/"), or under a prefix with http.StripPrefix.
//
// For each delivery it finds the environment and integration (404
// unknown_environment, unknown_provider_config), reads the body (413 beyond
// MaxBody), verifies the signature when the provider's data describes one
// (401 invalid_signature, failing closed when the integration has no
// secret), answers a URL-verification challenge, parses the body when
// routing needs it (400 invalid_body), matches connections by the
// connection_config value the data names and, when the integration's
// ForwardWebhooks is set, gives the Notifier one forward event per matched
// connection, or one without a connection when none matched (bounded by
// Forwards and MaxForward: 429 webhook_storage_full), marked Unverified
// when no signature verified the delivery. With a SyncRunner (Syncs), a
// verified delivery routed to connections also queues the webhook runs of
// the syncs that subscribe to its type (webhook_routing.type), in the
// same transaction as its forwards. It answers 200 {"success":true}
// without waiting for delivery or for the runs. Each delivery that
// reached an integration gets an operations-log entry, sampled when no
// signature verified it (see Sampler).
//
// It panics when a required field of cfg is nil.
func IncomingHandler(cfg IncomingConfig) http.Handler {
	switch {
	case cfg.Environments == nil:
		panic("webhooks: IncomingConfig.Environments is required")
	case cfg.Integrations == nil:
		panic("webhooks: IncomingConfig.Integrations is required")
	case cfg.Connections == nil:
		panic("webhooks: IncomingConfig.Connections is required")
	case cfg.Providers == nil:
		panic("webhooks: IncomingConfig.Providers is required")
	case cfg.Notifier == nil:
		panic("webhooks: IncomingConfig.Notifier is required")
	case cfg.Forwards != nil && cfg.Transactor == nil:
		panic("webhooks: IncomingConfig.Forwards requires Transactor")
	}
	if cfg.MaxForward == 0 {
		cfg.MaxForward = DefaultForwardQuota
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultIncomingMaxBody
	}
	if cfg.MaxScan <= 0 {
		cfg.MaxScan = DefaultIncomingMaxScan
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RefusalLogInterval <= 0 {
		cfg.RefusalLogInterval = DefaultRefusalLogInterval
	}
	if cfg.Sampler == nil {
		cfg.Sampler = oplog.NewSampler(cfg.RefusalLogInterval)
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	h := &incomingHandler{cfg: cfg}
	mux := http.NewServeMux()
	mux.HandleFunc(IncomingPattern, func(w http.ResponseWriter, r *http.Request) {
		if err := h.serve(w, r); err != nil {
			httpapi.WriteError(w, r, cfg.Logger, httpapi.StyleStandard, err)
		}
	})
	return mux
}

type incomingHandler struct {
	cfg IncomingConfig
}

// incomingRecord is what the log entry of one delivery says.
type incomingRecord struct {
	env       *environments.Environment
	it        *integrations.Integration
	verified  bool
	matched   int
	forwarded int
	syncRuns  int
	truncated bool
	challenge bool
	reason    string
	// suppressed counts the like entries (same outcome) of unverified
	// deliveries not recorded before this one.
	suppressed int
}

var errInvalidSignature = httpapi.WithStatus(http.StatusUnauthorized,
	store.Errorf(store.ErrUnauthorized, "invalid_signature", "The webhook signature is missing or invalid."))

// errStorageFull refuses a delivery whose forwards the integration's quota
// cannot hold. It is a 429, like the rate limit it extends: the sender
// should retry later, and the Service is not failing (a 5xx would also log
// an error per refused request of a flood).
var errStorageFull = httpapi.WithStatus(http.StatusTooManyRequests,
	store.Errorf(store.ErrRateLimited, "webhook_storage_full",
		"The integration's forwarded webhooks waiting for delivery fill its storage quota; retry later."))

func (h *incomingHandler) serve(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	envName, key := r.PathValue("environment"), r.PathValue("integration")
	env, err := h.cfg.Environments.GetByName(ctx, envName)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return store.NotFound("unknown_environment", "The environment %q was not found.", envName)
		}
		return err
	}
	if err := h.limit(w, r, env); err != nil {
		return err
	}
	it, err := h.cfg.Integrations.Get(ctx, env.ID, key)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return store.NotFound("unknown_provider_config", "The integration %q was not found.", key)
		}
		return err
	}
	var routing integrations.WebhookRouting
	if p, ok := h.cfg.Providers.Get(it.Provider); ok && p.WebhookRouting != nil {
		routing = *p.WebhookRouting
	}
	body, err := h.readBody(w, r)
	if err != nil {
		return err
	}
	d := &incomingRecord{env: env, it: it}

	if sig := routing.Signature; sig != nil {
		req := SignedRequest{Method: r.Method, URL: h.requestURL(r, envName, key), Header: r.Header, Body: body}
		if err := VerifyProviderSignature(sig, webhookSecret(sig, it.Credentials), req, h.cfg.Now()); err != nil {
			d.reason = SignatureReason(err)
			h.record(ctx, d, d.reason, oplog.StatusFailure, "Incoming webhook refused: invalid signature ("+d.reason+").")
			return errInvalidSignature
		}
		d.verified = true
	}

	conn := routing.Connection
	needJSON := routing.Challenge != nil || (conn != nil && conn.Source != "header")
	doc, err := parseIncoming(body, r.Header.Get("Content-Type"), needJSON)
	if err != nil {
		d.reason = "invalid_body"
		h.record(ctx, d, d.reason, oplog.StatusFailure, "Incoming webhook refused: the body is not valid JSON.")
		return err
	}

	if c := routing.Challenge; c != nil && !doc.array {
		if v, ok := lookupPath(doc.value, c.Path); ok {
			if s, ok := scalarString(v); ok && s == c.Value {
				d.challenge = true
				return h.answerChallenge(w, r, d, doc.value, c.ResponsePath)
			}
		}
	}

	var groups []forwardGroup
	if conn != nil {
		groups, d.truncated, err = h.route(ctx, r, d, conn, doc)
		if err != nil {
			return err
		}
	} else {
		groups = []forwardGroup{{payload: doc.payload}}
	}
	for _, g := range groups {
		if g.connectionID != "" {
			d.matched++
		}
	}
	runs := h.syncWebhooks(r, d, routing.Type, doc, groups)
	if it.ForwardWebhooks || len(runs) > 0 {
		if err := h.enqueue(ctx, d, groups, runs); errors.Is(err, errStorageFull) {
			d.reason = "storage_full"
			h.record(ctx, d, d.reason, oplog.StatusFailure, "Incoming webhook refused: the forwarded webhooks waiting for delivery fill the integration's storage quota.")
			w.Header().Set("Retry-After", strconv.Itoa(forwardRetryAfter))
			return err
		} else if err != nil {
			d.reason = "enqueue_failed"
			h.record(ctx, d, d.reason, oplog.StatusFailure, "Incoming webhook could not be forwarded or its sync runs queued.")
			return err
		}
	}
	h.record(ctx, d, outcomeAccepted, oplog.StatusSuccess, d.summary())
	httpapi.WriteJSON(w, http.StatusOK, map[string]bool{"success": true})
	return nil
}

func (h *incomingHandler) limit(w http.ResponseWriter, r *http.Request, env *environments.Environment) error {
	if h.cfg.Limiter == nil {
		return nil
	}
	ctx := r.Context()
	dec, err := h.cfg.Limiter.Allow(ctx, "webhook:"+env.Account)
	if err != nil {
		h.cfg.Logger.WarnContext(ctx, "rate limiter failed; incoming webhook allowed", "err", err)
		return nil
	}
	if dec.Allowed {
		return nil
	}
	secs := max(int(math.Ceil(dec.RetryAfter.Seconds())), 1)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	return httpapi.WithStatus(http.StatusTooManyRequests, store.Errorf(store.ErrRateLimited, "too_many_requests",
		"Rate limit exceeded; retry after %d seconds.", secs))
}

func (h *incomingHandler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	tooLarge := func() error {
		return httpapi.WithStatus(http.StatusRequestEntityTooLarge, store.Invalid("payload_too_large",
			fmt.Sprintf("The request body is larger than %d bytes.", h.cfg.MaxBody)))
	}
	if r.ContentLength > h.cfg.MaxBody {
		return nil, tooLarge()
	}
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge()
		}
		return nil, store.Invalid("invalid_body", "The request body could not be read.")
	}
	return b, nil
}

// requestURL is the URL the provider called, for signatures over ${url}.
func (h *incomingHandler) requestURL(r *http.Request, env, key string) string {
	var u string
	if h.cfg.PublicURL != "" {
		u = integrations.WebhookURL(h.cfg.PublicURL, env, key)
	} else {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		} else if p, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ","); strings.TrimSpace(p) == "https" {
			scheme = "https"
		}
		u = scheme + "://" + r.Host + r.URL.EscapedPath()
	}
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	return u
}

// webhookSecret returns the integration secret that keys the provider's
// signature: the webhook secret, or the client secret when the data says so.
func webhookSecret(sig *integrations.WebhookSignature, c *integrations.Credentials) string {
	if c == nil {
		return ""
	}
	if sig.Secret == "client_secret" {
		return c.ClientSecret
	}
	return c.WebhookSecret
}

func (h *incomingHandler) answerChallenge(w http.ResponseWriter, r *http.Request, d *incomingRecord, doc any, path string) error {
	v, ok := lookupPath(doc, path)
	if !ok {
		d.reason = "invalid_challenge"
		h.record(r.Context(), d, d.reason, oplog.StatusFailure, "Incoming webhook challenge refused: it has no "+path+".")
		return store.Invalid("invalid_body", "The challenge has no "+path+".")
	}
	h.record(r.Context(), d, outcomeChallenge, oplog.StatusSuccess, "Incoming webhook challenge answered.")
	if s, ok := v.(string); ok {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, s)
		return nil
	}
	httpapi.WriteJSON(w, http.StatusOK, v)
	return nil
}

// incomingDoc is a parsed body.
type incomingDoc struct {
	// payload is what is forwarded: a json.RawMessage for a JSON body (the
	// parsed form's JSON for a form body), else the body as a string.
	payload any
	// value is the decoded JSON (numbers as json.Number) when parsed and
	// not an array.
	value any
	// array marks a JSON array body; elems and values are its elements.
	array  bool
	elems  []json.RawMessage
	values []any
}

// parseIncoming parses the body. When needJSON, it must be JSON (or a form
// whose fields, or whose "payload" field holding JSON, are then the
// document); otherwise any body is accepted and a non-JSON one is
// forwarded as a string.
func parseIncoming(body []byte, contentType string, needJSON bool) (*incomingDoc, error) {
	invalid := store.Invalid("invalid_body", "The webhook body must be valid JSON.")
	if !json.Valid(body) {
		if !needJSON {
			return &incomingDoc{payload: string(body)}, nil
		}
		mt, _, _ := mime.ParseMediaType(contentType)
		if mt != "application/x-www-form-urlencoded" {
			return nil, invalid
		}
		form, err := url.ParseQuery(string(body))
		if err != nil || len(form) == 0 {
			return nil, invalid
		}
		if p := form.Get("payload"); len(form) == 1 && json.Valid([]byte(p)) {
			body = []byte(p)
		} else {
			m := make(map[string]string, len(form))
			for k := range form {
				m[k] = form.Get(k)
			}
			body, err = json.Marshal(m)
			if err != nil {
				return nil, invalid
			}
		}
	}
	doc := &incomingDoc{payload: json.RawMessage(body)}
	if !needJSON {
		return doc, nil
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(body, &doc.elems); err != nil {
			return nil, invalid
		}
		doc.array = true
		doc.values = make([]any, len(doc.elems))
		for i, e := range doc.elems {
			v, err := decodeNumbers(e)
			if err != nil {
				return nil, invalid
			}
			doc.values[i] = v
		}
		return doc, nil
	}
	v, err := decodeNumbers(body)
	if err != nil {
		return nil, invalid
	}
	doc.value = v
	return doc, nil
}

func decodeNumbers(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// forwardGroup is one forward event: a matched connection (or none) and
// the payload it gets.
type forwardGroup struct {
	connectionID string
	payload      any
	// elems and values are the elements of an array body routed to the
	// connection, raw and decoded (nil for other bodies).
	elems  []json.RawMessage
	values []any
}

// route matches the delivery to connections. An object body (or a header
// value) yields one group per matched connection with the whole payload, or
// one unmatched group. An array body is routed element by element: each
// matched connection gets the array of its elements, and the elements that
// matched nothing go together in one unmatched group, so that no
// connection's webhook URL receives another tenant's events.
func (h *incomingHandler) route(ctx context.Context, r *http.Request, d *incomingRecord, conn *integrations.WebhookConnection, doc *incomingDoc) ([]forwardGroup, bool, error) {
	extract := func(v any) (string, bool) {
		x, ok := lookupPath(v, conn.Path)
		if !ok {
			return "", false
		}
		s, ok := scalarString(x)
		if !ok {
			return "", false
		}
		return routingValue(s, conn.TrimSuffix)
	}
	var whole string
	var wholeOK bool
	var elemVals []string
	var elemOK []bool
	want := map[string]bool{}
	switch {
	case conn.Source == "header":
		vals := r.Header.Values(conn.Path)
		if len(vals) == 1 {
			whole, wholeOK = routingValue(strings.TrimSpace(vals[0]), conn.TrimSuffix)
		}
	case doc.array:
		elemVals, elemOK = make([]string, len(doc.values)), make([]bool, len(doc.values))
		for i, v := range doc.values {
			elemVals[i], elemOK[i] = extract(v)
			if elemOK[i] {
				want[elemVals[i]] = true
			}
		}
	default:
		whole, wholeOK = extract(doc.value)
	}
	if wholeOK {
		want[whole] = true
	}
	var matches []routedMatch
	truncated := false
	if len(want) > 0 {
		var err error
		matches, truncated, err = h.findConnections(ctx, d.env.ID, d.it.UniqueKey, conn.ConnectionConfigKey, want)
		if err != nil {
			return nil, false, err
		}
	}
	if conn.Source == "header" || !doc.array {
		if len(matches) == 0 {
			return []forwardGroup{{payload: doc.payload}}, truncated, nil
		}
		groups := make([]forwardGroup, len(matches))
		for i, m := range matches {
			groups[i] = forwardGroup{connectionID: m.connectionID, payload: doc.payload}
		}
		return groups, truncated, nil
	}
	matchedValues := map[string]bool{}
	var groups []forwardGroup
	for _, m := range matches {
		matchedValues[m.value] = true
		var part []json.RawMessage
		var values []any
		for i, e := range doc.elems {
			if elemOK[i] && elemVals[i] == m.value {
				part = append(part, e)
				values = append(values, doc.values[i])
			}
		}
		groups = append(groups, forwardGroup{connectionID: m.connectionID, payload: rawArray(part), elems: part, values: values})
	}
	var rest []json.RawMessage
	for i, e := range doc.elems {
		if !elemOK[i] || !matchedValues[elemVals[i]] {
			rest = append(rest, e)
		}
	}
	if len(rest) > 0 || len(groups) == 0 {
		groups = append(groups, forwardGroup{payload: rawArray(rest)})
	}
	return groups, truncated, nil
}

func rawArray(elems []json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range elems {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// routingValue applies TrimSuffix; an empty value routes nowhere, and so
// does one no connection config can hold (a NUL or invalid UTF-8).
func routingValue(s, suffix string) (string, bool) {
	if suffix != "" {
		s = strings.TrimSuffix(s, suffix)
	}
	return s, s != "" && strings.IndexByte(s, 0) < 0 && utf8.ValidString(s)
}

type routedMatch struct {
	connectionID string
	value        string
}

// findConnections returns the integration's connections whose
// connection_config[key] is in want, in the lister's order, each once. It
// scans at most MaxScan connections unless the lister is a
// ConnectionFinder; truncated reports that the scan stopped at the bound.
func (h *incomingHandler) findConnections(ctx context.Context, envID int64, integrationKey, key string, want map[string]bool) ([]routedMatch, bool, error) {
	var out []routedMatch
	seen := map[string]bool{}
	add := func(cs []RoutableConnection) {
		for _, c := range cs {
			v, ok := configString(c.ConnectionConfig, key)
			if ok && want[v] && !seen[c.ConnectionID] {
				seen[c.ConnectionID] = true
				out = append(out, routedMatch{connectionID: c.ConnectionID, value: v})
			}
		}
	}
	if f, ok := h.cfg.Connections.(ConnectionFinder); ok {
		values := make([]string, 0, len(want))
		for v := range want {
			values = append(values, v)
		}
		sort.Strings(values)
		cs, err := f.FindConnectionsByConfig(ctx, envID, integrationKey, key, values)
		if err != nil {
			return nil, false, err
		}
		add(cs)
		return out, false, nil
	}
	for offset := 0; offset < h.cfg.MaxScan; offset += incomingPageSize {
		limit := min(incomingPageSize, h.cfg.MaxScan-offset)
		page, err := h.cfg.Connections.ListRoutableConnections(ctx, envID, integrationKey, limit, offset)
		if err != nil {
			return nil, false, err
		}
		add(page)
		if len(page) < limit {
			return out, false, nil
		}
	}
	return out, true, nil
}

// syncWebhooks returns the routed webhooks whose sync runs a delivery
// queues: none without a SyncRunner or a verified signature; else one per
// matched connection (one per element routed to it, for an array body),
// with the type that typ locates.
func (h *incomingHandler) syncWebhooks(r *http.Request, d *incomingRecord, typ *integrations.WebhookType, doc *incomingDoc, groups []forwardGroup) []RoutedWebhook {
	if h.cfg.Syncs == nil || !d.verified {
		return nil
	}
	typeOf := func(v any) string {
		if typ == nil {
			return ""
		}
		if typ.Source == "header" {
			return strings.TrimSpace(r.Header.Get(typ.Path))
		}
		x, ok := lookupPath(v, typ.Path)
		if !ok {
			return ""
		}
		s, _ := scalarString(x)
		return s
	}
	var out []RoutedWebhook
	for _, g := range groups {
		if g.connectionID == "" {
			continue
		}
		if g.elems != nil {
			for i, e := range g.elems {
				out = append(out, RoutedWebhook{ConnectionID: g.connectionID, Type: typeOf(g.values[i]), Payload: e})
			}
			continue
		}
		payload, value := jsonPayload(doc)
		out = append(out, RoutedWebhook{ConnectionID: g.connectionID, Type: typeOf(value), Payload: payload})
	}
	return out
}

// jsonPayload returns the payload of a delivery that is not an array as
// JSON (a body that is not JSON as a JSON string) and its decoded value,
// decoding it when routing did not need to.
func jsonPayload(doc *incomingDoc) (json.RawMessage, any) {
	switch p := doc.payload.(type) {
	case json.RawMessage:
		v := doc.value
		if v == nil {
			v, _ = decodeNumbers(p)
		}
		return p, v
	case string:
		b, _ := json.Marshal(p)
		return b, nil
	}
	b, _ := json.Marshal(doc.payload)
	return b, nil
}

// enqueue gives the Notifier one forward event per group when the
// integration forwards its webhooks, and the SyncRunner the routed
// webhooks, atomically when a Transactor is set.
func (h *incomingHandler) enqueue(ctx context.Context, d *incomingRecord, groups []forwardGroup, runs []RoutedWebhook) error {
	syncRuns := 0
	notify := func(ctx context.Context) error {
		syncRuns = 0
		if len(runs) > 0 {
			n, err := h.cfg.Syncs.RunWebhookSyncs(ctx, d.env.ID, d.it.UniqueKey, runs)
			if err != nil {
				return fmt.Errorf("queue sync runs: %w", err)
			}
			syncRuns = n
		}
		if !d.it.ForwardWebhooks {
			return nil
		}
		for _, g := range groups {
			e := Event{
				EnvironmentID:  d.env.ID,
				IntegrationKey: d.it.UniqueKey,
				ConnectionID:   g.connectionID,
				Type:           TypeForward,
				Unverified:     !d.verified,
				Payload: &ForwardPayload{
					From:              d.it.Provider,
					Type:              TypeForward,
					ConnectionID:      g.connectionID,
					ProviderConfigKey: d.it.UniqueKey,
					Payload:           g.payload,
				},
			}
			if err := h.cfg.Notifier.Notify(ctx, e); err != nil {
				return err
			}
		}
		return h.trim(ctx, d)
	}
	var err error
	if h.cfg.Transactor != nil {
		err = h.cfg.Transactor.WithTx(ctx, notify)
	} else {
		err = notify(ctx)
	}
	if errors.Is(err, errStorageFull) {
		return err
	}
	if err != nil {
		return fmt.Errorf("webhooks: enqueue incoming webhook: %w", err)
	}
	if d.it.ForwardWebhooks {
		d.forwarded = len(groups)
	}
	d.syncRuns = syncRuns
	return nil
}

// trim bounds the integration's forwards (IncomingConfig.Forwards) in the
// transaction that stored the delivery's: errStorageFull when the quota
// cannot hold them and no signature verified the delivery.
func (h *incomingHandler) trim(ctx context.Context, d *incomingRecord) error {
	if h.cfg.Forwards == nil || h.cfg.MaxForward < 0 {
		return nil
	}
	left, err := h.cfg.Forwards.TrimForwards(ctx, d.env.ID, d.it.UniqueKey, h.cfg.MaxForward)
	if err != nil {
		return err
	}
	if left > h.cfg.MaxForward && !d.verified {
		return errStorageFull
	}
	return nil
}

func (d *incomingRecord) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Incoming %s webhook", d.it.Provider)
	if d.verified {
		b.WriteString(" (signature verified)")
	}
	fmt.Fprintf(&b, ": %d connection(s) matched", d.matched)
	if d.it.ForwardWebhooks {
		fmt.Fprintf(&b, ", %d forward event(s) queued", d.forwarded)
	} else {
		b.WriteString(", not forwarded (forward_webhooks is off)")
	}
	if d.syncRuns > 0 {
		fmt.Fprintf(&b, ", %d sync run(s) queued", d.syncRuns)
	}
	b.WriteString(".")
	return b.String()
}

// record writes the delivery's log entry: never the body, a header value or
// a secret. The entry of a delivery that no signature verified (anyone may
// have sent it) is written as the Sampler allows, under the outcome given.
// A failure to record is logged, not returned.
func (h *incomingHandler) record(ctx context.Context, d *incomingRecord, outcome, status, msg string) {
	if h.cfg.Log == nil {
		return
	}
	if !d.verified {
		k := oplog.SampleKey{EnvironmentID: d.env.ID, IntegrationKey: d.it.UniqueKey, Operation: "incoming", Outcome: outcome}
		ok, n := h.cfg.Sampler.Admit(k, h.cfg.Now())
		if !ok {
			return
		}
		d.suppressed = n
	}
	meta := map[string]any{
		"provider":  d.it.Provider,
		"verified":  d.verified,
		"matched":   d.matched,
		"forwarded": d.forwarded,
	}
	if d.syncRuns > 0 {
		meta["sync_runs"] = d.syncRuns
	}
	if d.reason != "" {
		meta["reason"] = d.reason
	}
	if d.truncated {
		meta["truncated"] = true
	}
	if d.challenge {
		meta["challenge"] = true
	}
	if d.suppressed > 0 {
		meta["suppressed"] = d.suppressed
	}
	e := &oplog.Entry{
		EnvironmentID:  d.env.ID,
		Type:           "webhook",
		Operation:      "incoming",
		Status:         status,
		IntegrationKey: d.it.UniqueKey,
		Message:        msg,
		Meta:           meta,
	}
	if _, err := h.cfg.Log.Record(ctx, e); err != nil {
		h.cfg.Logger.WarnContext(ctx, "incoming webhook: log entry not recorded", "err", err)
	}
}

// lookupPath follows a dot path through JSON objects.
func lookupPath(v any, path string) (any, bool) {
	if path == "" {
		return nil, false
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// configString returns connection_config[key] as a string: the flat key
// first (token_response_metadata stores "team.id" flat), then the dot path
// through nested objects.
func configString(cfg map[string]any, key string) (string, bool) {
	v, ok := cfg[key]
	if !ok && strings.Contains(key, ".") {
		v, ok = lookupPath(map[string]any(cfg), key)
	}
	if !ok {
		return "", false
	}
	return scalarString(v)
}

// scalarString renders a JSON scalar as the string it is compared as:
// strings as they are, numbers in plain decimal (so the number 123 in a
// payload equals "123" in connection_config), booleans as true/false.
// Objects, arrays and null have none.
func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return canonicalNumber(string(x)), true
	case float64:
		return formatFloat(x), true
	case float32:
		return formatFloat(float64(x)), true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// canonicalNumber keeps a JSON integer as written (so that integers beyond
// float64 precision compare exactly) and renders other numbers as
// formatFloat does.
func canonicalNumber(s string) string {
	digits := strings.TrimPrefix(s, "-")
	if digits != "" && strings.Trim(digits, "0123456789") == "" {
		if digits == "0" {
			return "0"
		}
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return formatFloat(f)
}

// formatFloat renders integral values without a fraction or exponent.
func formatFloat(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
