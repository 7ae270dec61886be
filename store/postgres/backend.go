package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Defaults of the RateLimiter that [Connect] makes: the same as
// connect.Config's in-process limit.
const (
	DefaultRateLimitRequests = 3000
	DefaultRateLimitWindow   = time.Minute
)

// Backend is what a connect.Service needs of one Postgres database, on one
// pool: give its Store, Scheduler and RateLimiter to connect.Config.
//
//	pg, err := postgres.Connect(ctx, os.Getenv("DATABASE_URL"), nil)
//	...
//	defer pg.Close() // after the Service's Stop
//	svc, err := connect.New(connect.Config{Store: pg.Store, Scheduler: pg.Scheduler,
//		RateLimiter: pg.RateLimiter, ...})
type Backend struct {
	// DB is the pool ([Open]): the host may run its own queries on it.
	DB *sql.DB
	// Store is the Store on DB, its tables migrated.
	Store *Store
	// Scheduler is the job queue on DB ([NewScheduler]): the Service
	// starts and stops it.
	Scheduler *Scheduler
	// RateLimiter is the rate limit shared by every process on the
	// database ([NewRateLimiter]), of Options.RateLimitRequests per
	// Options.RateLimitWindow.
	RateLimiter *RateLimiter
}

// Connect opens a pool on the database at dsn ([Open]), creates or updates
// the tables ([Migrate]), and returns the [Store], [Scheduler] and
// [RateLimiter] on it, all with opts (nil for every default):
//
//   - the pool of opts.MaxConns sessions (20 by default), kept open;
//   - the tables in schema opts.Schema ("connect" by default);
//   - the Scheduler with opts.Scheduler ([SchedulerConfig]'s defaults,
//     its Logger defaulting to opts.Logger);
//   - the RateLimiter of opts.RateLimitRequests per opts.RateLimitWindow
//     ([DefaultRateLimitRequests] per [DefaultRateLimitWindow]).
//
// Nothing is left open when it fails. Close the Backend on shutdown, after
// the connect.Service that uses it has stopped (its Stop stops the
// Scheduler). Hosts that want to build the parts themselves, or share a pool
// they opened, call Open, Migrate, New, NewScheduler and NewRateLimiter.
func Connect(ctx context.Context, dsn string, opts *Options) (*Backend, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	var cfg SchedulerConfig
	if opts != nil {
		cfg = opts.Scheduler
	}
	if cfg.Logger == nil {
		cfg.Logger = o.logger
	}
	n := cmp.Or(o.rateLimitRequests, DefaultRateLimitRequests)
	w := cmp.Or(o.rateLimitWindow, DefaultRateLimitWindow)
	if n < 1 || w < 0 || w%time.Microsecond != 0 {
		return nil, fmt.Errorf("postgres: Options.RateLimitRequests %d must be positive and Options.RateLimitWindow %s a positive multiple of 1µs", n, w)
	}
	db, err := Open(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	if err := Migrate(ctx, db, opts); err != nil {
		db.Close()
		return nil, err
	}
	st, err := New(db, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	sched, err := NewScheduler(db, opts, cfg)
	if err != nil {
		st.Close()
		db.Close()
		return nil, err
	}
	return &Backend{DB: db, Store: st, Scheduler: sched, RateLimiter: NewRateLimiter(db, opts, n, w)}, nil
}

// Close closes the Store (its prepared statements), then the pool. Stop the
// Service first: a started Scheduler or a request in flight would find the
// pool closed.
func (b *Backend) Close() error {
	return errors.Join(b.Store.Close(), b.DB.Close())
}
