package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
)

// Defaults of the pool that [Open] makes.
const (
	// DefaultMaxConns is the default of Options.MaxConns: the number of
	// Postgres sessions one process keeps open at most, shared by the
	// Store, the Scheduler (River), the webhook outbox and the rate
	// limiter. Four processes at the default fit in Postgres' default
	// max_connections of 100 (97 once its 3 superuser slots are set
	// aside) with room for the host's own tools.
	DefaultMaxConns = 20
	// DefaultMinConns is the default of Options.MinConns: the sessions
	// Open opens ahead. A reference server under 64 concurrent clients
	// used 5 to 7 at once.
	DefaultMinConns = 8
	// DefaultConnMaxIdleTime is the default of Options.ConnMaxIdleTime:
	// a session left unused this long is closed, so a process that had a
	// burst gives its sessions back to Postgres. database/sql hands out
	// the session released last first, so under steady load the sessions
	// at the bottom of its idle list serve only the peaks: it must be long
	// enough that they are still open at the next peak (at 5 minutes, a
	// server under constant load reopened one now and then).
	DefaultConnMaxIdleTime = 30 * time.Minute
	// DefaultConnMaxLifetime is the default of Options.ConnMaxLifetime: a
	// session is closed (once it is idle) after this long, so that
	// sessions move to a new server after a failover or a DNS change and
	// their per-session memory on the server is bounded.
	DefaultConnMaxLifetime = time.Hour
	// DefaultApplicationName is the application_name that Open gives its
	// sessions unless the URL (or PGAPPNAME) names one: it tells them
	// apart in pg_stat_activity.
	DefaultApplicationName = "connect"

	// openTimeout bounds Open's first connection and ping.
	openTimeout = 30 * time.Second
)

// Open opens a pool of sessions on the Postgres database at dsn (a URL such
// as "postgres://user:password@host:5432/db?sslmode=require", or lib/pq's
// "key=value" form), sized for the Store's workload, and checks that the
// database answers. Use the pool for [Migrate], [New], [NewScheduler] and
// [NewRateLimiter] (and the host's own queries), and close it on shutdown,
// after the Store.
//
// The pool keeps up to opts.MaxConns sessions (default [DefaultMaxConns])
// and keeps as many idle: database/sql's default of 2 idle connections
// would close every session beyond the second as soon as it is released,
// so under concurrent requests each query would open a new Postgres
// session (a fork on the server, authentication, and the Store's prepared
// statements prepared again). Sessions are closed after opts.ConnMaxIdleTime
// unused (default 30 minutes) and opts.ConnMaxLifetime after they opened
// (default 1 hour). Open opens opts.MinConns of them (default
// [DefaultMinConns]) before it returns. Requests beyond MaxConns wait for a
// session rather than opening one; see the package documentation's "Connections" section for
// how to size it.
//
// Open uses lib/pq's connector, which also reads the PG* environment
// variables (PGHOST, PGSSLMODE, ...) for what dsn leaves out, as lib/pq
// always does. Sessions are named [DefaultApplicationName] in
// pg_stat_activity unless dsn or PGAPPNAME names them. The first
// connection waits at most 30 seconds (less when ctx ends sooner); its
// error names the host and database, never the password.
func Open(ctx context.Context, dsn string, opts *Options) (*sql.DB, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if o.maxConns < 0 || o.minConns < -1 || o.connMaxIdleTime < -1 || o.connMaxLifetime < -1 {
		return nil, errors.New("postgres: Options.MaxConns must not be negative, Options.MinConns, ConnMaxIdleTime and ConnMaxLifetime not below -1")
	}
	cfg, err := pq.NewConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: the database URL is malformed: %w", redactDSNError(err, dsn))
	}
	if cfg.ApplicationName == "" {
		cfg.ApplicationName = DefaultApplicationName
	}
	connector, err := pq.NewConnectorConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", redactDSNError(err, dsn))
	}
	db := sql.OpenDB(connector)
	n := o.maxConns
	if n == 0 {
		n = DefaultMaxConns
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxIdleTime(poolDuration(o.connMaxIdleTime, DefaultConnMaxIdleTime))
	db.SetConnMaxLifetime(poolDuration(o.connMaxLifetime, DefaultConnMaxLifetime))

	pctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		where := "database " + cfg.Database
		if cfg.Database == "" {
			where = "its default database"
		}
		host := cfg.Host
		if host == "" {
			host = "localhost"
		}
		return nil, fmt.Errorf("postgres: cannot reach %s on %s (port %d) as user %q: %w",
			where, host, cfg.Port, cfg.User, redactDSNError(err, dsn))
	}
	ahead := o.minConns
	if ahead == 0 {
		ahead = DefaultMinConns
	}
	if ahead = min(ahead, n); ahead > 0 {
		if err := openAhead(pctx, db, ahead); err != nil {
			db.Close()
			return nil, fmt.Errorf("postgres: opening %d sessions ahead: %w", ahead, redactDSNError(err, dsn))
		}
	}
	return db, nil
}

// openAhead opens n sessions of db at once (the ping's among them) and
// leaves them idle in the pool.
func openAhead(ctx context.Context, db *sql.DB, n int) error {
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	return nil
}

// poolDuration maps an Options duration to database/sql's: 0 is def, -1 is
// never (database/sql's 0).
func poolDuration(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// redactDSNError returns err, or, should its text contain dsn or the
// password of dsn, an error whose text has them replaced.
func redactDSNError(err error, dsn string) error {
	msg := err.Error()
	secrets := []string{dsn}
	if m := urlPassword.FindStringSubmatch(dsn); m != nil {
		secrets = append(secrets, m[1])
		if p, uerr := url.PathUnescape(m[1]); uerr == nil {
			secrets = append(secrets, p)
		}
	}
	if cfg, cerr := pq.NewConfig(dsn); cerr == nil {
		secrets = append(secrets, cfg.Password)
	}
	for _, m := range kvPassword.FindAllStringSubmatch(dsn, -1) {
		v := m[1]
		if strings.HasPrefix(v, "'") {
			v = kvUnescape.Replace(strings.TrimSuffix(v[1:], "'"))
		}
		secrets = append(secrets, v)
	}
	redacted := msg
	for _, s := range secrets {
		if s != "" {
			redacted = strings.ReplaceAll(redacted, s, "[redacted]")
		}
	}
	if redacted == msg {
		return err
	}
	return errors.New(redacted)
}

var (
	urlPassword = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://[^/@:]*:([^/@]*)@`)
	kvUnescape  = strings.NewReplacer(`\'`, `'`, `\\`, `\`)
	kvPassword  = regexp.MustCompile(`(?:^|\s)password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)`)
)

// poolCheckEvery is how many Store calls pass between two looks at the
// pool's statistics.
const poolCheckEvery = 128

// poolWatch looks, every poolCheckEvery calls, for the sign of a pool that
// churns: connections closed because the pool may keep fewer idle ones
// than it uses (sql.DBStats.MaxIdleClosed). It logs one warning per Store.
type poolWatch struct {
	logger     *slog.Logger
	calls      atomic.Uint64
	done       atomic.Bool
	idleClosed int64 // MaxIdleClosed when New ran
}

// newPoolWatch checks db when the Store is created: a pool without a
// limit is warned about at once.
func newPoolWatch(db *sql.DB, logger *slog.Logger) *poolWatch {
	w := &poolWatch{logger: logger}
	st := db.Stats()
	w.idleClosed = st.MaxIdleClosed
	if st.MaxOpenConnections == 0 {
		w.done.Store(true)
		logger.Warn("postgres: the *sql.DB has no limit on open connections (SetMaxOpenConns was not called): "+
			"under concurrent load it opens Postgres sessions without bound, up to the server's max_connections, "+
			"and with database/sql's default of 2 idle connections closes them again as soon as they are released, "+
			"so most queries pay for a new session. Open the pool with postgres.Open, or call SetMaxOpenConns and "+
			"SetMaxIdleConns with the same value",
			"max_open_connections", 0, "open_connections", st.OpenConnections)
	}
	return w
}

// check is called on every Store call; every poolCheckEvery calls it reads
// the pool's statistics.
func (w *poolWatch) check(db *sql.DB) {
	if w.done.Load() || w.calls.Add(1)%poolCheckEvery != 0 {
		return
	}
	st := db.Stats()
	if st.MaxIdleClosed <= w.idleClosed || !w.done.CompareAndSwap(false, true) {
		return
	}
	w.logger.Warn("postgres: the *sql.DB closes connections it has just used because it may keep fewer idle ones "+
		"than it uses at once (its MaxIdleConns is below the load; database/sql's default is 2), so queries "+
		"keep opening new Postgres sessions. Open the pool with postgres.Open, or call SetMaxIdleConns with the "+
		"value of SetMaxOpenConns (and let SetConnMaxIdleTime close idle sessions)",
		"max_open_connections", st.MaxOpenConnections, "open_connections", st.OpenConnections,
		"closed_max_idle", st.MaxIdleClosed-w.idleClosed)
}
