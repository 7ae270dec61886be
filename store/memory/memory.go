package memory

import (
	"context"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/webhooks"
)

// Store is an in-memory connect.Store. Use [New] to create one; the zero
// value is not usable.
type Store struct {
	// sem is a one-slot semaphore: holding its slot is holding the store's
	// lock. A channel rather than a sync.Mutex lets a waiting call give up
	// when its context ends.
	sem chan struct{}
	// d is the current state. Records reachable from d are never mutated:
	// every write stores a fresh copy, which makes a snapshot a shallow copy
	// of the maps.
	d *data
}

// New returns an empty Store.
func New() *Store {
	return &Store{sem: make(chan struct{}, 1), d: newData()}
}

type connKey struct {
	env            int64
	integrationKey string
	connectionID   string
}

type integrationKey struct {
	env int64
	key string
}

type data struct {
	lastEnvID, lastAPIKeyID, lastIntegrationID, lastConnID int64

	envs         map[int64]*environments.Environment
	apiKeys      map[int64]*environments.APIKey
	variables    map[int64][]environments.Variable
	integrations map[int64]*integrations.Integration
	conns        map[int64]*connections.Connection
	// connIndex finds a connection's ID from its identity.
	connIndex map[connKey]int64
	// logs are kept in append order; logIDs holds their IDs.
	logs   []*oplog.Entry
	logIDs map[string]struct{}
	// deliveries are the webhook deliveries by ID.
	deliveries map[string]*webhooks.Delivery

	lastSessionID int64
	// sessions are the connect sessions by ID; sessionIndex finds one
	// from its token hash.
	sessions     map[int64]*connections.Session
	sessionIndex map[string]int64
	// sessionConns holds the IDs of the connections created through a
	// connect session. IDs are never reused, so the mark of a deleted
	// connection never applies to another one.
	sessionConns map[int64]struct{}

	lastFlowID int64
	// flows are the OAuth flows by ID; flowIndex finds one from its state
	// hash.
	flows     map[int64]*connections.OAuthFlow
	flowIndex map[string]int64

	// The state of functions (see functions.go). functions are the
	// deployed functions by ID, functionIndex finds one from its
	// identity; syncs are the syncs by ID, syncIndex finds one from its
	// identity; syncRuns and actionTasks are by ID.
	lastFunctionID int64
	functions      map[int64]*functions.Function
	functionIndex  map[functionKey]int64
	syncs          map[string]*functions.Schedule
	syncIndex      map[syncKey]string
	syncRuns       map[string]*functions.SyncRun
	checkpoints    map[checkpointKey]*functions.StoredCheckpoint
	actionTasks    map[string]*functions.ActionTask

	// recordScopes are the sync records by scope (see records.go).
	// recordsGen says which scopes this data owns: a scope whose gen is
	// recordsGen was copied since the last snapshot and may change in
	// place; any other is shared with a snapshot and is copied first.
	recordScopes map[recordScopeKey]*recordScope
	recordsGen   uint64
}

func newData() *data {
	return &data{
		envs:          map[int64]*environments.Environment{},
		apiKeys:       map[int64]*environments.APIKey{},
		variables:     map[int64][]environments.Variable{},
		integrations:  map[int64]*integrations.Integration{},
		conns:         map[int64]*connections.Connection{},
		connIndex:     map[connKey]int64{},
		logIDs:        map[string]struct{}{},
		deliveries:    map[string]*webhooks.Delivery{},
		sessions:      map[int64]*connections.Session{},
		sessionIndex:  map[string]int64{},
		sessionConns:  map[int64]struct{}{},
		flows:         map[int64]*connections.OAuthFlow{},
		flowIndex:     map[string]int64{},
		functions:     map[int64]*functions.Function{},
		functionIndex: map[functionKey]int64{},
		syncs:         map[string]*functions.Schedule{},
		syncIndex:     map[syncKey]string{},
		syncRuns:      map[string]*functions.SyncRun{},
		checkpoints:   map[checkpointKey]*functions.StoredCheckpoint{},
		actionTasks:   map[string]*functions.ActionTask{},
		recordScopes:  map[recordScopeKey]*recordScope{},
	}
}

// snapshot returns a copy of d that later writes to d do not change. Records
// are shared: they are immutable once stored. Record scopes are shared too:
// snapshot moves d to a new generation, so that d copies each scope before
// its first change.
func (d *data) snapshot() *data {
	c := *d
	c.envs = maps.Clone(d.envs)
	c.apiKeys = maps.Clone(d.apiKeys)
	c.variables = maps.Clone(d.variables)
	c.integrations = maps.Clone(d.integrations)
	c.conns = maps.Clone(d.conns)
	c.connIndex = maps.Clone(d.connIndex)
	c.logs = d.logs[:len(d.logs):len(d.logs)]
	c.logIDs = maps.Clone(d.logIDs)
	c.deliveries = maps.Clone(d.deliveries)
	c.sessions = maps.Clone(d.sessions)
	c.sessionIndex = maps.Clone(d.sessionIndex)
	c.sessionConns = maps.Clone(d.sessionConns)
	c.flows = maps.Clone(d.flows)
	c.flowIndex = maps.Clone(d.flowIndex)
	c.functions = maps.Clone(d.functions)
	c.functionIndex = maps.Clone(d.functionIndex)
	c.syncs = maps.Clone(d.syncs)
	c.syncIndex = maps.Clone(d.syncIndex)
	c.syncRuns = maps.Clone(d.syncRuns)
	c.checkpoints = maps.Clone(d.checkpoints)
	c.actionTasks = maps.Clone(d.actionTasks)
	c.recordScopes = maps.Clone(d.recordScopes)
	// The scopes are now shared: d copies a scope before it changes it.
	d.recordsGen++
	return &c
}

type txKey struct{}

// tx marks a context as running inside a transaction of store s. The store
// lock is held by WithTx; mu serialises calls made with the transaction's
// context from several goroutines.
type tx struct {
	s    *Store
	mu   sync.Mutex
	done bool
	// afterCommit are the functions AfterCommit queued, in order; guarded
	// by mu.
	afterCommit []func()
}

// lock acquires the right to read and write s.d for one call: the
// transaction's lock when ctx belongs to a live transaction of s, else the
// store's lock.
func (s *Store) lock(ctx context.Context) (unlock func(), err error) {
	if t, ok := ctx.Value(txKey{}).(*tx); ok && t.s == s {
		t.mu.Lock()
		if !t.done {
			return t.mu.Unlock, nil
		}
		t.mu.Unlock()
	}
	return s.acquire(ctx)
}

func (s *Store) acquire(ctx context.Context) (release func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case s.sem <- struct{}{}:
		return func() { <-s.sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// WithTx runs fn atomically. It holds the store's lock until fn returns, and
// restores the state it found when fn returns an error or panics. A WithTx
// called with a context of a transaction of s joins it.
//
// Once the transaction has committed and the lock is released, WithTx runs
// the functions queued by [Store.AfterCommit], in order, before it returns.
func (s *Store) WithTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if t, ok := ctx.Value(txKey{}).(*tx); ok && t.s == s {
		t.mu.Lock()
		live := !t.done
		t.mu.Unlock()
		if live {
			return fn(ctx)
		}
	}
	hooks, err := s.runTx(ctx, fn)
	for _, h := range hooks {
		h()
	}
	return err
}

// runTx runs fn in a new transaction and returns, when it commits, the
// functions queued by AfterCommit.
func (s *Store) runTx(ctx context.Context, fn func(ctx context.Context) error) (hooks []func(), err error) {
	release, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	snap := s.d.snapshot()
	t := &tx{s: s}
	committed := false
	defer func() {
		t.mu.Lock()
		t.done = true
		if committed {
			hooks = t.afterCommit
		}
		t.afterCommit = nil
		t.mu.Unlock()
		if !committed {
			s.d = snap
		}
	}()
	if err := fn(context.WithValue(ctx, txKey{}, t)); err != nil {
		return nil, err
	}
	committed = true
	return nil, nil
}

// AfterCommit runs fn once the transaction of ctx has committed, and never
// if it rolls back. In a transaction, fn is queued and run by the outermost
// WithTx after the commit, once the store's lock is released (so fn may
// call the Store), in the goroutine that called WithTx and before WithTx
// returns. Outside a transaction, or with the context of a transaction that
// has ended, AfterCommit runs fn at once.
//
// It implements store.CommitHooker, which in-process schedulers use so that a
// job enqueued in a transaction exists only if the transaction commits.
func (s *Store) AfterCommit(ctx context.Context, fn func()) {
	if t, ok := ctx.Value(txKey{}).(*tx); ok && t.s == s {
		t.mu.Lock()
		if !t.done {
			t.afterCommit = append(t.afterCommit, fn)
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
	}
	fn()
}

// oldestFirst returns up to limit of the items for which key reports true,
// in the order of the time and then the ID that key returns: the oldest
// first, what retention deletes.
func oldestFirst[T any](items iter.Seq[T], limit int, key func(T) (at time.Time, id string, ok bool)) []T {
	type keyed struct {
		v  T
		at time.Time
		id string
	}
	var all []keyed
	for v := range items {
		if at, id, ok := key(v); ok {
			all = append(all, keyed{v, at, id})
		}
	}
	slices.SortFunc(all, func(a, b keyed) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	out := make([]T, 0, min(limit, len(all)))
	for _, k := range all[:min(limit, len(all))] {
		out = append(out, k.v)
	}
	return out
}
