package sqlite

import "context"

// Backend is what a connect.Service needs of one SQLite file: give its Store
// and Scheduler to connect.Config.
//
//	db, err := sqlite.Connect(ctx, "connect.db", nil)
//	...
//	defer db.Close() // after the Service's Stop
//	svc, err := connect.New(connect.Config{Store: db.Store, Scheduler: db.Scheduler, ...})
//
// The rate limit is the Service's own, in process (connect.Config's
// RateLimitRequests): one process uses the file.
type Backend struct {
	// Store is the Store on the file, its tables migrated.
	Store *Store
	// Scheduler is the job queue in the same file ([NewScheduler]): the
	// Service starts and stops it.
	Scheduler *Scheduler
}

// Connect opens the database at path, creating it when it is missing
// ([Open]), creates or updates its tables and those of the job queue, and
// returns the Store and the Scheduler on it, with opts (nil for every
// default; opts.Scheduler configures the Scheduler, its Logger defaulting to
// opts.Logger). Nothing is left open when it fails. Close the Backend on
// shutdown, after the connect.Service that uses it has stopped.
func Connect(ctx context.Context, path string, opts *Options) (*Backend, error) {
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
	st, err := Open(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	sched, err := NewScheduler(ctx, st, cfg)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &Backend{Store: st, Scheduler: sched}, nil
}

// Close closes the Store. Stop the Service first.
func (b *Backend) Close() error { return b.Store.Close() }
