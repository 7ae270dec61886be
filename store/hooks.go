package store

import (
	"context"
	"errors"
	"time"
)

// CommitHooker is implemented by Stores that can run a function after the
// transaction of a context commits. In-process schedulers use it so that a
// job enqueued inside WithTx exists only if the transaction commits.
type CommitHooker interface {
	// AfterCommit runs fn once the outermost transaction of ctx commits,
	// and never if it rolls back. Outside a transaction it runs fn at once.
	AfterCommit(ctx context.Context, fn func())
}

// Durable is implemented by Stores whose data outlives the process, such as
// store/postgres. connect.New requires an explicit Scheduler with such a
// Store: the default in-process scheduler would lose queued jobs (webhook
// deliveries) on a restart while their records stay pending in the Store.
type Durable interface {
	Durable() bool
}

// ChangeFeed is implemented by Stores that list the changes to connections
// committed through any of their users: store/postgres, which several
// instances share, and store/sqlite, whose file another process may open
// too (a tool beside the server). Each process that caches connections
// drops what it cached of those changes. A Service whose Store has one
// caches the proxy's connections for minutes (Config.ProxyCacheMaxAge)
// while it is started and the feed answers, instead of seconds: even in a
// single process, the feed is what lets the cache live long, since a
// change made behind the Service's back is listed too.
type ChangeFeed interface {
	// ChangeCursor returns a cursor from which every change committed
	// after the call is listed (and possibly some committed shortly
	// before it). It fails with ErrTooManyChanges when it cannot tell
	// them apart from the many committed before.
	ChangeCursor(ctx context.Context) (ChangeCursor, error)
	// ConnectionChanges returns the changes committed after cur, and the
	// cursor to pass next: a change committed later, even by a
	// transaction older than the listed ones, comes in a later call. A
	// change may be listed twice. When more than limit changes are
	// pending, it lists none and fails with ErrTooManyChanges: take a new
	// cursor, and drop every cached value.
	ConnectionChanges(ctx context.Context, cur ChangeCursor, limit int) ([]ConnectionChange, ChangeCursor, error)
	// PruneConnectionChanges deletes the changes recorded before t and
	// returns how many it deleted.
	PruneConnectionChanges(ctx context.Context, before time.Time) (int, error)
}

// ErrTooManyChanges is the error of a ChangeFeed that has more changes to
// list than the caller can take.
var ErrTooManyChanges = errors.New("store: too many changes pending in the change feed")

// ChangeCursor is a position in a ChangeFeed. Its fields belong to the
// Store that made it.
type ChangeCursor struct {
	// Floor: every change of a transaction below it was listed.
	Floor uint64
	// Seen are the transactions at or above Floor whose changes were
	// listed.
	Seen []uint64
}

// ConnectionChange names a connection that was updated or deleted or, when
// ConnectionID is empty, an integration that was (every connection of it).
type ConnectionChange struct {
	EnvironmentID  int64
	IntegrationKey string
	ConnectionID   string
}
