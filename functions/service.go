package functions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/batch"
	"github.com/embedauth/connect/internal/cache"
	"github.com/embedauth/connect/internal/secret"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/proxy"
	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

// Connections is what runs need of connections: reading one with its
// credentials (refreshed when due) and changing its metadata.
// *connections.Service implements it.
type Connections interface {
	Get(ctx context.Context, environmentID int64, integrationKey, connectionID string, opts connections.GetOptions) (*connections.Connection, error)
	SetMetadata(ctx context.Context, environmentID int64, integrationKey string, connectionIDs []string, metadata map[string]any, merge bool) error
}

// Integrations finds an integration. *integrations.Service implements it.
type Integrations interface {
	Get(ctx context.Context, environmentID int64, key string) (*integrations.Integration, error)
}

// Proxier makes calls with a connection's credentials. *proxy.Proxy
// implements it.
type Proxier interface {
	Do(ctx context.Context, req *proxy.Request) (*http.Response, error)
	Client(environmentID int64, integrationKey, connectionID string, opts proxy.Options) *http.Client
}

// Environments finds an environment and its variables.
// *environments.Service implements it.
type Environments interface {
	Get(ctx context.Context, id int64) (*environments.Environment, error)
	Variables(ctx context.Context, environmentID int64) ([]environments.PlainVariable, error)
}

// TxStore is the Store of a Service with transactions.
type TxStore interface {
	Store
	store.Transactor
	AppendLogs(ctx context.Context, es []*oplog.Entry) error
	ListEnvironments(ctx context.Context) ([]*environments.Environment, error)
	ListIntegrations(ctx context.Context, environmentID int64) ([]*integrations.Integration, error)
	ListConnections(ctx context.Context, f connections.Filter) ([]*connections.Connection, error)
	CountConnections(ctx context.Context, environmentID int64, integrationKey string) (int, error)
	GetConnection(ctx context.Context, environmentID int64, integrationKey, connectionID string) (*connections.Connection, error)
}

// Config configures a Service. connect.New builds it.
type Config struct {
	Store        TxStore
	Connections  Connections
	Integrations Integrations
	Environments Environments
	Catalog      *integrations.Catalog
	Proxy        Proxier
	Keyring      *secret.Keyring
	Scheduler    jobs.Scheduler
	Notifier     webhooks.Notifier
	Log          *oplog.Writer
	Logger       *slog.Logger
	Now          func() time.Time
	// WebhookFrom is the "from" of webhook bodies.
	WebhookFrom string
	// ActionTimeout bounds an action run. Defaults to DefaultActionTimeout.
	ActionTimeout time.Duration
	// SyncTimeout bounds a sync run. Defaults to DefaultSyncTimeout.
	SyncTimeout time.Duration
	// Heartbeat is how often a running sync run marks itself alive; a run
	// not marked for 3 heartbeats is taken as interrupted. Defaults to
	// DefaultHeartbeat.
	Heartbeat time.Duration
	// TickInterval is how often a started Service looks for due syncs.
	// Defaults to DefaultTickInterval.
	TickInterval time.Duration
	// RetryBackoff is the wait before attempt n (from 2) of an async
	// action. Defaults to DefaultRetryBackoff.
	RetryBackoff func(n int) time.Duration
	// MaxWebhookPayload bounds the payload a webhook run stores with its
	// job (RunWebhookSyncs), in bytes. Defaults to
	// DefaultMaxWebhookPayload.
	MaxWebhookPayload int
}

// DefaultRetryBackoff is the default wait before attempt n (from 2) of an
// async action: 3 seconds, doubling, at most 5 minutes.
func DefaultRetryBackoff(n int) time.Duration {
	if n > 10 {
		return 5 * time.Minute
	}
	return min(3*time.Second<<max(n-2, 0), 5*time.Minute)
}

// Defaults of Config.
const (
	DefaultActionTimeout = 15 * time.Minute
	DefaultSyncTimeout   = time.Hour
	DefaultHeartbeat     = 10 * time.Second
	DefaultTickInterval  = time.Second
)

// Service runs functions. Create it with NewService; register functions
// with Register.
type Service struct {
	cfg    Config
	st     TxStore
	logger *slog.Logger

	// local holds the ids of the sync runs ("run:ID") and action attempts
	// ("task:ID") this process is executing: its reapers never take them
	// as interrupted, however late their heartbeats are written (a
	// machine or a database slow for longer than staleAfter); only
	// another process's, or a dead one's, can be.
	local sync.Map

	mu  sync.RWMutex
	reg map[fnKey]*registered // guarded by mu
	// deployed remembers the (environment, integration) pairs whose
	// registered functions are stored, with the registry's generation at
	// the time; guarded by mu.
	deployed map[envKey]int
	gen      int                // guarded by mu
	runtimes map[string]Runtime // guarded by mu
	// templates are the templates of each provider; guarded by mu.
	templates map[string][]Template
	// retentionBucket is the retention interval this process last queued
	// the retention job for; guarded by mu.
	retentionBucket int64

	// fns caches deployed functions for FunctionCacheTTL; changes through
	// this Service drop their entries.
	fns *cache.Cache[fnCacheKey, *Function]
	// logs coalesces the operations log entries of concurrent runs into
	// one write.
	logs *batch.Batcher[*oplog.Entry, struct{}]
	// pendingLogs counts the run entries being written in the background
	// (recordLater); Stop waits for them.
	pendingLogs pending
	// conns caches the connections runs are prepared for (without their
	// credentials) for ConnectionCacheTTL; deletions and re-authorizations
	// through this Service drop their entries.
	conns *cache.Cache[connCacheKey, *connections.Connection]

	// deploying holds the environments whose deployment this process
	// runs (DeployFunctions); guarded by deployMu.
	deployMu  sync.Mutex
	deploying map[int64]bool

	loopMu   sync.Mutex
	stopLoop context.CancelFunc // guarded by loopMu
	loopDone chan struct{}      // guarded by loopMu
}

type fnKey struct {
	integration string
	kind        Kind
	name        string
}

// fnCacheKey identifies a deployed function in the cache.
type fnCacheKey struct {
	env         int64
	integration string
	kind        Kind
	name        string
}

// connCacheKey identifies a connection in the cache.
type connCacheKey struct {
	env         int64
	integration string
	id          string
}

// ConnectionCacheTTL is how long a Service reuses a connection it read to
// prepare a run (its credentials are read by the proxy, which has its own
// cache): a connection deleted through another instance may still be
// accepted for a run within it (whose provider calls then fail).
const ConnectionCacheTTL = 5 * time.Second

// FunctionCacheTTL is how long a Service reuses a deployed function it
// read: a function deployed, disabled or deleted through another instance
// is seen within it.
const FunctionCacheTTL = 5 * time.Second

type envKey struct {
	env         int64
	integration string
}

// NewService returns a Service. connect.New calls it.
func NewService(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Connections == nil || cfg.Integrations == nil || cfg.Keyring == nil || cfg.Log == nil {
		return nil, errors.New("functions: Config needs Store, Connections, Integrations, Keyring and Log")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ActionTimeout <= 0 {
		cfg.ActionTimeout = DefaultActionTimeout
	}
	if cfg.SyncTimeout <= 0 {
		cfg.SyncTimeout = DefaultSyncTimeout
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = DefaultTickInterval
	}
	if cfg.RetryBackoff == nil {
		cfg.RetryBackoff = DefaultRetryBackoff
	}
	if cfg.WebhookFrom == "" {
		cfg.WebhookFrom = "nango"
	}
	if cfg.MaxWebhookPayload <= 0 {
		cfg.MaxWebhookPayload = DefaultMaxWebhookPayload
	}
	s := &Service{cfg: cfg, st: cfg.Store, logger: cfg.Logger, reg: map[fnKey]*registered{}, deployed: map[envKey]int{}}
	s.fns = cache.New(cache.Config[fnCacheKey, *Function]{
		TTL:  FunctionCacheTTL,
		Now:  cfg.Now,
		Gone: func(err error) bool { return errors.Is(err, store.ErrNotFound) },
		Load: func(ctx context.Context, k fnCacheKey) (*Function, error) {
			return s.st.GetFunction(ctx, k.env, k.integration, k.kind, k.name)
		},
	})
	s.conns = cache.New(cache.Config[connCacheKey, *connections.Connection]{
		TTL:  ConnectionCacheTTL,
		Now:  cfg.Now,
		Gone: func(err error) bool { return errors.Is(err, store.ErrNotFound) },
		Load: func(ctx context.Context, k connCacheKey) (*connections.Connection, error) {
			return s.st.GetConnection(ctx, k.env, k.integration, k.id)
		},
	})
	s.logs = batch.New(batch.Config[*oplog.Entry, struct{}]{
		MaxBatch: 256,
		Run: func(ctx context.Context, es []*oplog.Entry) ([]batch.Result[struct{}], error) {
			if err := s.st.AppendLogs(ctx, es); err != nil {
				return nil, err
			}
			return make([]batch.Result[struct{}], len(es)), nil
		},
	})
	return s, nil
}

// getFunction returns a deployed function, from the cache when it was
// read less than FunctionCacheTTL ago.
func (s *Service) getFunction(ctx context.Context, env int64, integration string, kind Kind, name string) (*Function, error) {
	return s.fns.Get(ctx, fnCacheKey{env, integration, kind, name})
}

// forgetFunction drops a function from the cache after a change.
func (s *Service) forgetFunction(env int64, integration string, kind Kind, name string) {
	s.fns.Delete(fnCacheKey{env, integration, kind, name})
}

// record writes an operations log entry, stamped, together with those of
// other runs that write at the same time.
func (s *Service) record(ctx context.Context, e *oplog.Entry) error {
	s.cfg.Log.Stamp(e)
	_, err := s.logs.Do(ctx, e)
	return err
}

// recordLater writes an operations log entry in the background, so that
// the run's caller does not wait for it (Stop does).
func (s *Service) recordLater(ctx context.Context, e *oplog.Entry) {
	s.cfg.Log.Stamp(e)
	s.pendingLogs.add()
	go func() {
		defer s.pendingLogs.done()
		if _, err := s.logs.Do(context.WithoutCancel(ctx), e); err != nil {
			s.logger.Warn("functions: log a run", "entry", e.ID, "err", err)
		}
	}()
}

// connection returns a connection (without its credentials), from the
// cache when it was read less than ConnectionCacheTTL ago.
func (s *Service) connection(ctx context.Context, env int64, integration, id string) (*connections.Connection, error) {
	return s.conns.Get(ctx, connCacheKey{env, integration, id})
}

// forgetConnection drops a connection from the cache after a change.
func (s *Service) forgetConnection(c *connections.Connection) {
	s.conns.Delete(connCacheKey{c.EnvironmentID, c.IntegrationKey, c.ConnectionID})
}

// Register registers functions written in Go: Action, Sync and OnEvent
// values (or pointers to them). Each is deployed to the integration its
// Integration names, in every environment that has one: stored (listed by
// GET /integrations/{key}/functions) the first time the integration is
// used, and again when its definition changes. Registering a function
// again under the same integration, kind and name replaces it. Register
// may be called before or after Start. A function that an environment has
// deployed at run time (with the nango CLI) under the same integration,
// kind and name is not replaced there: DeployAll (and so Start) reports
// it as a *ClashError.
func (s *Service) Register(fns ...any) error {
	rs := make([]*registered, 0, len(fns))
	for _, f := range fns {
		r, err := compile(f)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rs {
		s.reg[fnKey{r.fn.Integration, r.fn.Kind, r.fn.Name}] = r
	}
	s.gen++
	return nil
}

// registeredFor returns the registered functions of an integration key.
func (s *Service) registeredFor(integration string) ([]*registered, int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*registered
	for k, r := range s.reg {
		if k.integration == integration {
			out = append(out, r)
		}
	}
	return out, s.gen
}

// isRegistered reports whether a function is registered in Go.
func (s *Service) isRegistered(integration string, kind Kind, name string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.reg[fnKey{integration, kind, name}] != nil
}

// lookup returns the registered code of a stored function.
func (s *Service) lookup(f *Function) *registered {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.reg[fnKey{f.Integration, f.Kind, f.Name}]
}

// deploy stores the registered functions of an integration of an
// environment, unless this process did since the last Register. New
// syncs get their schedules for the integration's existing connections.
// A registered function whose name a function deployed at run time holds
// in the environment is not stored (the deployed one stays): that is
// logged, and reported by DeployAll.
func (s *Service) deploy(ctx context.Context, env int64, integration string) error {
	err := s.deployRegistered(ctx, env, integration)
	if _, ok := errors.AsType[*ClashError](err); ok {
		s.logger.ErrorContext(ctx, "functions: registered functions not deployed", "err", err)
		return nil
	}
	return err
}

// ClashError is a function registered in Go (Register) that an
// environment has deployed at run time under the same integration, kind
// and name (with the nango CLI): the deployed one stays, and the Go one is
// not deployed to that environment. DeployAll, and so Start, report it;
// rename the Go function, or delete the deployed one. It matches
// store.ErrConflict.
type ClashError struct {
	EnvironmentID int64
	Integration   string
	Kind          Kind
	Name          string
	// Runtime is the deployed function's.
	Runtime string
}

func (e *ClashError) Error() string {
	return fmt.Sprintf("functions: the %s %q registered in Go for integration %q is not deployed to environment %d: a function of runtime %q deployed there has its name",
		e.Kind, e.Name, e.Integration, e.EnvironmentID, e.Runtime)
}

// Is makes a ClashError match store.ErrConflict.
func (e *ClashError) Is(target error) bool { return target == store.ErrConflict }

// deployRegistered is deploy, returning the ClashErrors (joined) of the
// functions it did not store.
func (s *Service) deployRegistered(ctx context.Context, env int64, integration string) error {
	rs, gen := s.registeredFor(integration)
	k := envKey{env, integration}
	s.mu.RLock()
	done, ok := s.deployed[k]
	s.mu.RUnlock()
	if ok && done == gen {
		return nil
	}
	now := s.nowUTC()
	var clashes []error
	for _, r := range rs {
		f := r.fn
		f.EnvironmentID, f.DeployedAt, f.UpdatedAt = env, now, now
		changed, err := s.st.PutFunction(ctx, &f)
		if errors.Is(err, store.ErrConflict) {
			stored, gerr := s.st.GetFunction(ctx, env, integration, f.Kind, f.Name)
			if gerr == nil && stored.Runtime != GoRuntime {
				clashes = append(clashes, &ClashError{EnvironmentID: env, Integration: integration, Kind: f.Kind, Name: f.Name,
					Runtime: stored.Runtime})
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("functions: deploy %s %q to %q: %w", f.Kind, f.Name, integration, err)
		}
		if changed {
			s.forgetFunction(env, integration, f.Kind, f.Name)
		}
		if changed && f.Kind == KindSync {
			if err := s.scheduleExisting(ctx, &f); err != nil {
				return err
			}
		}
	}
	mark := func() {
		s.mu.Lock()
		s.deployed[k] = gen
		s.mu.Unlock()
	}
	// In a transaction (the one of an incoming webhook's sync runs), the
	// deployment counts once it is committed.
	if h, ok := s.st.(store.CommitHooker); ok {
		h.AfterCommit(ctx, mark)
	} else {
		mark()
	}
	return errors.Join(clashes...)
}

// ForgetIntegration makes the Service store the registered functions of an
// integration again the next time it is used: connect calls it when an
// integration is deleted (its stored functions go with it), so that one
// created again under the same key gets them.
func (s *Service) ForgetIntegration(env int64, integration string) {
	s.mu.Lock()
	delete(s.deployed, envKey{env, integration})
	s.mu.Unlock()
	s.fns.DeleteFunc(func(k fnCacheKey, _ *Function) bool { return k.env == env && k.integration == integration })
}

// DeployAll stores the registered functions in every environment that has
// their integration. Start calls it. A registered function that a
// function deployed at run time in an environment clashes with is not
// stored there (the deployed one stays): DeployAll stores the others and
// then returns the ClashErrors, joined.
func (s *Service) DeployAll(ctx context.Context) error {
	envs, err := s.st.ListEnvironments(ctx)
	if err != nil {
		return err
	}
	var clashes []error
	for _, e := range envs {
		its, err := s.st.ListIntegrations(ctx, e.ID)
		if err != nil {
			return err
		}
		for _, it := range its {
			err := s.deployRegistered(ctx, e.ID, it.UniqueKey)
			if _, ok := errors.AsType[*ClashError](err); ok {
				clashes = append(clashes, err)
				continue
			}
			if err != nil {
				return err
			}
		}
	}
	return errors.Join(clashes...)
}

func (s *Service) nowUTC() time.Time { return s.cfg.Now().UTC().Truncate(time.Microsecond) }

// pending counts work in the background that a Stop waits for. Unlike a
// sync.WaitGroup, work may start while a wait is in progress.
type pending struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0; nil when nobody waits
}

func (p *pending) add() {
	p.mu.Lock()
	p.n++
	p.mu.Unlock()
}

func (p *pending) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n--
	if p.n == 0 && p.zero != nil {
		close(p.zero)
		p.zero = nil
	}
}

// wait returns once no work is pending, or ctx's error when it ends
// first.
func (p *pending) wait(ctx context.Context) error {
	p.mu.Lock()
	if p.n == 0 {
		p.mu.Unlock()
		return nil
	}
	if p.zero == nil {
		p.zero = make(chan struct{})
	}
	ch := p.zero
	p.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
