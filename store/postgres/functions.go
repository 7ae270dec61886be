package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/internal/uuid"
	"github.com/embedauth/connect/store"
)

// limitArg is the LIMIT of a call's limit: NULL, no limit, when it is 0 or
// less.
func limitArg(limit int) any {
	if limit <= 0 {
		return nil
	}
	return limit
}

// uuidArg checks that id is a UUID, so that a malformed one is
// store.ErrInvalid without a statement that would fail and abort the
// transaction.
func uuidArg(field, id string) (string, error) {
	c, ok := uuid.Parse(id)
	if !ok {
		return "", fmt.Errorf("postgres: %s %q: %w: not a UUID", field, id, store.ErrInvalid)
	}
	return c, nil
}

// optionalUUIDArg is uuidArg for a column where "" is NULL.
func optionalUUIDArg(field, id string) (any, error) {
	if id == "" {
		return nil, nil
	}
	return uuidArg(field, id)
}

// rawArg is a json.RawMessage for a jsonb parameter: NULL when empty.
// Postgres checks the rest (bad JSON, bad text: store.ErrInvalid).
func rawArg(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

func rawJSON(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

// ---- Functions ----

const functionColumns = `id, environment_id, integration_key, kind, name, runtime, version, source,
	enabled, definition, code, source_code, sdk_version, deployed_at, updated_at`

type functionRow struct {
	ID            int64
	EnvironmentID int64
	Integration   string
	Kind          string
	Name          string
	Runtime       string
	Version       string
	Source        string
	Enabled       bool
	Definition    []byte
	Code          []byte
	SourceCode    []byte
	SDKVersion    string
	DeployedAt    time.Time
	UpdatedAt     time.Time
}

// scanTargets lists the fields in the order of functionColumns.
func (r *functionRow) scanTargets() []any {
	return []any{&r.ID, &r.EnvironmentID, &r.Integration, &r.Kind, &r.Name, &r.Runtime, &r.Version, &r.Source,
		&r.Enabled, &r.Definition, &r.Code, &r.SourceCode, &r.SDKVersion, &r.DeployedAt, &r.UpdatedAt}
}

func (r *functionRow) function() (*functions.Function, error) {
	f := &functions.Function{
		ID:            r.ID,
		EnvironmentID: r.EnvironmentID,
		Integration:   r.Integration,
		Kind:          functions.Kind(r.Kind),
		Name:          r.Name,
		Runtime:       r.Runtime,
		Version:       r.Version,
		Source:        r.Source,
		Enabled:       r.Enabled,
		Code:          r.Code,
		SourceCode:    r.SourceCode,
		SDKVersion:    r.SDKVersion,
		DeployedAt:    r.DeployedAt.UTC(),
		UpdatedAt:     r.UpdatedAt.UTC(),
	}
	if err := decodeJSON("definition", r.Definition, &f.Definition); err != nil {
		return nil, err
	}
	return f, nil
}

// functionIdentity is the WHERE of the statements on one function's rows,
// in functions and function_versions.
const functionIdentity = `environment_id = $1 AND integration_key = $2 AND kind = $3 AND name = $4`

const functionVersionColumns = `environment_id, integration_key, kind, name, version, runtime, source,
	sdk_version, definition, code, source_code, deployed_at`

var (
	// qLockFunction reads a function and locks its row until the
	// transaction ends, so that what PutFunction compares and copies into
	// its versions is what it replaces.
	qLockFunction = newQuery(`SELECT ` + functionColumns + ` FROM {s}.functions WHERE ` + functionIdentity + `
	FOR UPDATE`)
	// qInsertFunction inserts a new function when its integration exists;
	// no row comes back when it does not, or when another transaction
	// inserted the function first.
	qInsertFunction = newQuery(`
	INSERT INTO {s}.functions (environment_id, integration_key, kind, name, runtime, version, source,
		enabled, definition, code, source_code, sdk_version, deployed_at, updated_at)
	SELECT $1::bigint, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, true, $8::jsonb, $9::bytea,
		$10::bytea, $11::text, $12::timestamptz, $12::timestamptz
	WHERE EXISTS (SELECT 1 FROM {s}.integrations WHERE environment_id = $1 AND unique_key = $2)
	ON CONFLICT (environment_id, integration_key, kind, name) DO NOTHING
	RETURNING ` + functionColumns)
	// qReplaceFunction replaces the function locked by qLockFunction when
	// it differs, copying the replaced one into its versions, and returns
	// the new row; none when nothing differs. An empty version ($6) matches
	// any stored one; $13 is the version of a changed function without
	// one. The CTEs see the row as it was before the UPDATE.
	qReplaceFunction = newQuery(`
	WITH old AS (
		SELECT * FROM {s}.functions
		WHERE ` + functionIdentity + ` AND NOT (runtime = $5 AND source = $7 AND definition = $8::jsonb
			AND code = $9::bytea AND source_code = $10::bytea AND sdk_version = $11 AND ($6::text = '' OR version = $6::text))
	), kept AS (
		INSERT INTO {s}.function_versions (` + functionVersionColumns + `)
		SELECT ` + functionVersionColumns + ` FROM old
	)
	UPDATE {s}.functions f SET runtime = $5, version = CASE WHEN $6::text <> '' THEN $6::text ELSE $13::text END,
		source = $7, definition = $8::jsonb, code = $9::bytea, source_code = $10::bytea, sdk_version = $11,
		deployed_at = $12, updated_at = $12
	FROM old WHERE f.id = old.id
	RETURNING ` + prefixColumns("f.", functionColumns))
	// qPruneFunctionVersions deletes the versions of a function beyond the
	// newest $5.
	qPruneFunctionVersions = newQuery(`DELETE FROM {s}.function_versions
	WHERE ` + functionIdentity + ` AND id < (SELECT min(id) FROM (SELECT id FROM {s}.function_versions
		WHERE ` + functionIdentity + ` ORDER BY id DESC LIMIT $5) newest)`)
	qListFunctionVersions = newQuery(`SELECT ` + functionVersionColumns + ` FROM {s}.function_versions
	WHERE ` + functionIdentity + ` ORDER BY id DESC`)
	qGetFunction   = newQuery(`SELECT ` + functionColumns + ` FROM {s}.functions WHERE ` + functionIdentity)
	qListFunctions = newQuery(`SELECT ` + functionColumns + ` FROM {s}.functions
	WHERE environment_id = $1 AND ($2::text = '' OR integration_key = $2::text)
	ORDER BY integration_key COLLATE "C", kind, name`)
	// qDeleteFunction deletes a function, copying it into its versions,
	// and, for a sync, its syncs (their runs cascade), in one statement;
	// it returns a row when the function existed.
	qDeleteFunction = newQuery(`
	WITH f AS (
		DELETE FROM {s}.functions WHERE ` + functionIdentity + `
		RETURNING *
	), kept AS (
		INSERT INTO {s}.function_versions (` + functionVersionColumns + `)
		SELECT ` + functionVersionColumns + ` FROM f
	), s AS (
		DELETE FROM {s}.syncs
		WHERE environment_id = $1 AND integration_key = $2 AND name = $4
			AND EXISTS (SELECT 1 FROM f WHERE f.kind = 'sync')
	)
	SELECT 1 FROM f`)
	qSetFunctionEnabled = newQuery(`UPDATE {s}.functions SET enabled = $5 WHERE ` + functionIdentity)
	// qTryLockDeploy takes the transaction-level advisory lock of the
	// deployments of an environment of this schema, without waiting. Its
	// key is a 64-bit hash of the schema and the environment: collisions
	// with the keys of Migrate and River are as unlikely as any two
	// hashes'.
	qTryLockDeploy = newQuery(`SELECT pg_try_advisory_xact_lock(
		hashtextextended('github.com/embedauth/connect/store/postgres.deploy:{s}:' || $1::bigint::text, 0))`)
)

// prefixColumns qualifies each column of a comma-separated list.
func prefixColumns(prefix, columns string) string {
	parts := strings.Split(columns, ",")
	for i, p := range parts {
		parts[i] = prefix + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

// PutFunction creates f, or replaces the function of its identity when
// anything but its version differs, or its version differs and f has
// one, copying the replaced one into its versions; see
// functions.FunctionStore. A missing integration is store.ErrNotFound; a
// function registered in Go replaced by one of another runtime, or the
// reverse, store.ErrConflict.
func (s *Store) PutFunction(ctx context.Context, f *functions.Function) (bool, error) {
	def, err := jsonArg("definition", f.Definition)
	if err != nil {
		return false, err
	}
	code, source := f.Code, f.SourceCode
	if code == nil {
		code = []byte{}
	}
	if source == nil {
		source = []byte{}
	}
	var changed bool
	var stored *functions.Function
	err = s.WithTx(ctx, func(ctx context.Context) error {
		// A function inserted by another transaction between the lock
		// and the insert is locked on the next turn.
		for range 3 {
			var old functionRow
			err := s.get(ctx, qLockFunction, &old, f.EnvironmentID, f.Integration, string(f.Kind), f.Name)
			if errors.Is(err, sql.ErrNoRows) {
				version := f.Version
				if version == "" {
					version = "1"
				}
				var r functionRow
				err := s.get(ctx, qInsertFunction, &r, f.EnvironmentID, f.Integration, string(f.Kind), f.Name, f.Runtime,
					version, f.Source, def, code, source, f.SDKVersion, f.DeployedAt)
				if errors.Is(err, sql.ErrNoRows) {
					if _, err := s.GetIntegration(ctx, f.EnvironmentID, f.Integration); err != nil {
						return err
					}
					continue
				}
				if err != nil {
					return dbErr(ctx, "put function", err, store.ErrNotFound)
				}
				changed = true
				stored, err = r.function()
				return err
			}
			if err != nil {
				return dbErr(ctx, "put function", err, nil)
			}
			if (old.Runtime == functions.GoRuntime) != (f.Runtime == functions.GoRuntime) {
				return conflict("%s function %q of %q has runtime %q: it cannot be replaced by one of runtime %q",
					f.Kind, f.Name, f.Integration, old.Runtime, f.Runtime)
			}
			var r functionRow
			err = s.get(ctx, qReplaceFunction, &r, f.EnvironmentID, f.Integration, string(f.Kind), f.Name, f.Runtime,
				f.Version, f.Source, def, code, source, f.SDKVersion, f.DeployedAt, functions.NextVersion(old.Version))
			if errors.Is(err, sql.ErrNoRows) {
				stored, err = old.function()
				return err
			}
			if err != nil {
				return dbErr(ctx, "put function", err, nil)
			}
			if _, err := s.exec(ctx, qPruneFunctionVersions, f.EnvironmentID, f.Integration, string(f.Kind), f.Name,
				functions.FunctionVersionsKept); err != nil {
				return dbErr(ctx, "prune function versions", err, nil)
			}
			changed = true
			stored, err = r.function()
			return err
		}
		return conflict("function %q: inserted and deleted while being put", f.Name)
	})
	if err != nil {
		return false, err
	}
	*f = *stored
	return changed, nil
}

// GetFunction returns the function of an identity, or store.ErrNotFound.
func (s *Store) GetFunction(ctx context.Context, environmentID int64, integration string, kind functions.Kind, name string) (*functions.Function, error) {
	var r functionRow
	err := s.get(ctx, qGetFunction, &r, environmentID, integration, string(kind), name)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("%s function %q of %q", kind, name, integration)
	}
	if err != nil {
		return nil, dbErr(ctx, "get function", err, nil)
	}
	return r.function()
}

// ListFunctions returns the functions of an environment, of one
// integration when integration is not empty, ordered by integration, kind,
// then name (byte order).
func (s *Store) ListFunctions(ctx context.Context, environmentID int64, integration string) ([]*functions.Function, error) {
	out := []*functions.Function{}
	err := s.queryRows(ctx, qListFunctions, func(rows *sql.Rows) error {
		var r functionRow
		if err := rows.Scan(r.scanTargets()...); err != nil {
			return err
		}
		f, err := r.function()
		if err != nil {
			return err
		}
		out = append(out, f)
		return nil
	}, environmentID, integration)
	if err != nil {
		return nil, dbErr(ctx, "list functions", err, nil)
	}
	return out, nil
}

// DeleteFunction deletes the function of an identity, copying it into its
// versions, and, for a sync, every sync of the function (by environment,
// integration and name) with their runs; or returns store.ErrNotFound.
func (s *Store) DeleteFunction(ctx context.Context, environmentID int64, integration string, kind functions.Kind, name string) error {
	return s.WithTx(ctx, func(ctx context.Context) error {
		var one int
		err := s.get(ctx, qDeleteFunction, &one, environmentID, integration, string(kind), name)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("%s function %q of %q", kind, name, integration)
		}
		if err != nil {
			return dbErr(ctx, "delete function", err, nil)
		}
		if _, err := s.exec(ctx, qPruneFunctionVersions, environmentID, integration, string(kind), name,
			functions.FunctionVersionsKept); err != nil {
			return dbErr(ctx, "prune function versions", err, nil)
		}
		return nil
	})
}

// SetFunctionEnabled sets Enabled, or returns store.ErrNotFound. It leaves
// UpdatedAt as it is.
func (s *Store) SetFunctionEnabled(ctx context.Context, environmentID int64, integration string, kind functions.Kind, name string, enabled bool) error {
	res, err := s.exec(ctx, qSetFunctionEnabled, environmentID, integration, string(kind), name, enabled)
	if err != nil {
		return dbErr(ctx, "set function enabled", err, nil)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("%s function %q of %q", kind, name, integration)
	}
	return nil
}

// ListFunctionVersions returns the earlier versions of a function, newest
// first.
func (s *Store) ListFunctionVersions(ctx context.Context, environmentID int64, integration string, kind functions.Kind, name string) ([]*functions.FunctionVersion, error) {
	out := []*functions.FunctionVersion{}
	err := s.queryRows(ctx, qListFunctionVersions, func(rows *sql.Rows) error {
		v := &functions.FunctionVersion{}
		var k string
		var def []byte
		if err := rows.Scan(&v.EnvironmentID, &v.Integration, &k, &v.Name, &v.Version, &v.Runtime, &v.Source,
			&v.SDKVersion, &def, &v.Code, &v.SourceCode, &v.DeployedAt); err != nil {
			return err
		}
		v.Kind, v.DeployedAt = functions.Kind(k), v.DeployedAt.UTC()
		if err := decodeJSON("definition", def, &v.Definition); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	}, environmentID, integration, string(kind), name)
	if err != nil {
		return nil, dbErr(ctx, "list function versions", err, nil)
	}
	return out, nil
}

// TryLockDeploy takes the deployment lock of an environment until the
// transaction of ctx ends (pg_try_advisory_xact_lock), and reports false,
// without waiting, when another transaction, of any process on the
// database, holds it. It must be called inside [Store.WithTx]; it
// implements functions.DeployLocker.
func (s *Store) TryLockDeploy(ctx context.Context, environmentID int64) (bool, error) {
	if _, ok := liveTx(ctx, s.raw); !ok {
		return false, errors.New("postgres: TryLockDeploy must be called inside WithTx")
	}
	var ok bool
	if err := s.get(ctx, qTryLockDeploy, &ok, environmentID); err != nil {
		return false, dbErr(ctx, "lock deployments", err, nil)
	}
	return ok, nil
}

// ---- Syncs ----

const syncColumns = `id, environment_id, connection_id, integration_key, connection_ref, name, variant,
	frequency, interval_ms, paused, next_run_at, last_sync_date, run_id, created_at, updated_at, version`

type syncRow struct {
	ID            string
	EnvironmentID int64
	ConnectionID  int64
	Integration   string
	ConnectionRef string
	Name          string
	Variant       string
	Frequency     string
	IntervalMS    int64
	Paused        bool
	NextRunAt     *time.Time
	LastSyncDate  *time.Time
	RunID         sql.NullString
	CreatedAt     time.Time
	UpdatedAt     time.Time
	Version       int64
}

// scanTargets lists the fields in the order of syncColumns.
func (r *syncRow) scanTargets() []any {
	return []any{&r.ID, &r.EnvironmentID, &r.ConnectionID, &r.Integration, &r.ConnectionRef, &r.Name, &r.Variant,
		&r.Frequency, &r.IntervalMS, &r.Paused, &r.NextRunAt, &r.LastSyncDate, &r.RunID, &r.CreatedAt,
		&r.UpdatedAt, &r.Version}
}

func (r *syncRow) schedule() *functions.Schedule {
	return &functions.Schedule{
		ID:            r.ID,
		EnvironmentID: r.EnvironmentID,
		ConnectionID:  r.ConnectionID,
		Integration:   r.Integration,
		ConnectionRef: r.ConnectionRef,
		Name:          r.Name,
		Variant:       r.Variant,
		Frequency:     r.Frequency,
		Interval:      time.Duration(r.IntervalMS) * time.Millisecond,
		Paused:        r.Paused,
		NextRunAt:     utcPtr(r.NextRunAt),
		LastSyncDate:  utcPtr(r.LastSyncDate),
		RunID:         r.RunID.String,
		CreatedAt:     r.CreatedAt.UTC(),
		UpdatedAt:     r.UpdatedAt.UTC(),
		Version:       r.Version,
	}
}

// scanSyncs returns a scan function of queryRows that appends to *out.
func scanSyncs(out *[]*functions.Schedule) func(rows *sql.Rows) error {
	return func(rows *sql.Rows) error {
		var r syncRow
		if err := rows.Scan(r.scanTargets()...); err != nil {
			return err
		}
		*out = append(*out, r.schedule())
		return nil
	}
}

// syncInput is one sync of CreateSyncs, as jsonb_to_recordset reads it.
type syncInput struct {
	ID            string     `json:"id"`
	EnvironmentID int64      `json:"environment_id"`
	ConnectionID  int64      `json:"connection_id"`
	Integration   string     `json:"integration_key"`
	ConnectionRef string     `json:"connection_ref"`
	Name          string     `json:"name"`
	Variant       string     `json:"variant"`
	Frequency     string     `json:"frequency"`
	IntervalMS    int64      `json:"interval_ms"`
	Paused        bool       `json:"paused"`
	NextRunAt     *time.Time `json:"next_run_at"`
	LastSyncDate  *time.Time `json:"last_sync_date"`
	RunID         *string    `json:"run_id"`
	CreatedAt     time.Time  `json:"created_at"`
}

// createSyncsBatch caps the syncs of one statement of CreateSyncs.
const createSyncsBatch = 1000

var (
	// qLockSyncConnections finds the connections of the syncs to create
	// and keeps them from being deleted until the transaction ends, as
	// the foreign key would, so that a missing one is store.ErrNotFound
	// without a failed statement.
	qLockSyncConnections = newQuery(`SELECT id FROM {s}.connections WHERE id = ANY($1::bigint[]) FOR KEY SHARE`)
	qCreateSyncs         = newQuery(`
	INSERT INTO {s}.syncs (` + syncColumns + `)
	SELECT x.id, x.environment_id, x.connection_id, x.integration_key, x.connection_ref, x.name, x.variant,
		x.frequency, x.interval_ms, x.paused, x.next_run_at, x.last_sync_date, x.run_id, x.created_at,
		x.created_at, 1
	FROM jsonb_to_recordset($1::jsonb) AS x(id uuid, environment_id bigint, connection_id bigint,
		integration_key text, connection_ref text, name text, variant text, frequency text,
		interval_ms bigint, paused boolean, next_run_at timestamptz, last_sync_date timestamptz,
		run_id uuid, created_at timestamptz)
	ON CONFLICT (connection_id, name, variant) DO NOTHING
	RETURNING id`)
)

// CreateSyncs creates the syncs that do not exist yet (by ConnectionID,
// Name, Variant; the first of syncs given twice) and leaves the others,
// and the structs given for them, as they are. It sets ID (a random
// UUID), UpdatedAt (to CreatedAt) and Version (1) of those it created.
// All or none: a missing connection is store.ErrNotFound and creates
// nothing.
func (s *Store) CreateSyncs(ctx context.Context, syncs []*functions.Schedule) (int, error) {
	if len(syncs) == 0 {
		return 0, nil
	}
	ins := make([]syncInput, len(syncs))
	ids := make([]string, len(syncs))
	conns := map[int64]bool{}
	var connIDs []int64
	for i, sy := range syncs {
		ids[i] = uuid.New()
		in := syncInput{ID: ids[i], EnvironmentID: sy.EnvironmentID, ConnectionID: sy.ConnectionID,
			Integration: sy.Integration, ConnectionRef: sy.ConnectionRef, Name: sy.Name, Variant: sy.Variant,
			Frequency: sy.Frequency, IntervalMS: sy.Interval.Milliseconds(), Paused: sy.Paused,
			NextRunAt: sy.NextRunAt, LastSyncDate: sy.LastSyncDate, CreatedAt: sy.CreatedAt}
		if sy.RunID != "" {
			run, err := uuidArg("run id", sy.RunID)
			if err != nil {
				return 0, err
			}
			in.RunID = &run
		}
		ins[i] = in
		if !conns[sy.ConnectionID] {
			conns[sy.ConnectionID] = true
			connIDs = append(connIDs, sy.ConnectionID)
		}
	}
	index := make(map[string]int, len(syncs))
	for i, id := range ids {
		index[id] = i
	}
	var created []string
	err := s.WithTx(ctx, func(ctx context.Context) error {
		found := 0
		err := s.queryRows(ctx, qLockSyncConnections, func(*sql.Rows) error { found++; return nil }, pq.Array(connIDs))
		if err != nil {
			return dbErr(ctx, "create syncs", err, nil)
		}
		if found != len(connIDs) {
			return notFound("connection of a sync")
		}
		created = created[:0]
		for start := 0; start < len(ins); start += createSyncsBatch {
			arg, err := jsonArg("syncs", ins[start:min(start+createSyncsBatch, len(ins))])
			if err != nil {
				return err
			}
			err = s.queryRows(ctx, qCreateSyncs, func(rows *sql.Rows) error {
				var id string
				if err := rows.Scan(&id); err != nil {
					return err
				}
				created = append(created, id)
				return nil
			}, arg)
			if err != nil {
				return dbErr(ctx, "create syncs", err, store.ErrNotFound)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, id := range created {
		sy := syncs[index[id]]
		sy.ID, sy.UpdatedAt, sy.Version = id, sy.CreatedAt, 1
	}
	return len(created), nil
}

var (
	qGetSync = newQuery(`SELECT ` + syncColumns + ` FROM {s}.syncs
	WHERE connection_id = $1 AND name = $2 AND variant = $3`)
	qGetSyncByID = newQuery(`SELECT ` + syncColumns + ` FROM {s}.syncs WHERE id = $1`)
	// qListSyncs is completed with the conditions and limit of each call.
	qListSyncs = newQuery(`SELECT ` + syncColumns + ` FROM {s}.syncs`)
)

// GetSync returns a sync by identity, or store.ErrNotFound.
func (s *Store) GetSync(ctx context.Context, connectionID int64, name, variant string) (*functions.Schedule, error) {
	var r syncRow
	err := s.get(ctx, qGetSync, &r, connectionID, name, variant)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("sync %q (%s) of connection %d", name, variant, connectionID)
	}
	if err != nil {
		return nil, dbErr(ctx, "get sync", err, nil)
	}
	return r.schedule(), nil
}

// GetSyncByID returns a sync by ID, or store.ErrNotFound. An ID that is
// not a UUID is store.ErrInvalid.
func (s *Store) GetSyncByID(ctx context.Context, id string) (*functions.Schedule, error) {
	id, err := uuidArg("sync id", id)
	if err != nil {
		return nil, err
	}
	var r syncRow
	err = s.get(ctx, qGetSyncByID, &r, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("sync %s", id)
	}
	if err != nil {
		return nil, dbErr(ctx, "get sync", err, nil)
	}
	return r.schedule(), nil
}

// ListSyncs returns the syncs matching f, by ID. An EnvironmentID of 0 is
// store.ErrInvalid; a Limit of 0 or less means no limit.
func (s *Store) ListSyncs(ctx context.Context, f functions.SyncFilter) ([]*functions.Schedule, error) {
	if f.EnvironmentID == 0 {
		return nil, fmt.Errorf("postgres: list syncs: %w: no environment", store.ErrInvalid)
	}
	var w where
	w.add("environment_id = ?", f.EnvironmentID)
	if f.Integration != "" {
		w.add("integration_key = ?", f.Integration)
	}
	if f.ConnectionID != 0 {
		w.add("connection_id = ?", f.ConnectionID)
	}
	if f.Name != "" {
		w.add("name = ?", f.Name)
	}
	if f.Variant != "" {
		w.add("variant = ?", f.Variant)
	}
	if f.AfterID != "" {
		after, err := uuidArg("after id", f.AfterID)
		if err != nil {
			return nil, err
		}
		w.add("id > ?::uuid", after)
	}
	query := s.text(qListSyncs) + w.String() + ` ORDER BY id LIMIT ` + w.arg(limitArg(f.Limit))
	rows, err := s.ext(ctx).QueryContext(ctx, query, w.args...)
	if err != nil {
		return nil, dbErr(ctx, "list syncs", err, nil)
	}
	defer rows.Close()
	out := []*functions.Schedule{}
	scan := scanSyncs(&out)
	for rows.Next() {
		if err := scan(rows); err != nil {
			return nil, dbErr(ctx, "list syncs", err, nil)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, dbErr(ctx, "list syncs", err, nil)
	}
	return out, nil
}

var (
	qUpdateSync = newQuery(`
	UPDATE {s}.syncs SET frequency = $3, interval_ms = $4, paused = $5, next_run_at = $6,
		last_sync_date = $7, run_id = $8, updated_at = $9, version = version + 1
	WHERE id = $1 AND version = $2
	RETURNING version`)
	qSyncExists = newQuery(`SELECT EXISTS (SELECT 1 FROM {s}.syncs WHERE id = $1)`)
	qDeleteSync = newQuery(`DELETE FROM {s}.syncs WHERE id = $1`)
)

// UpdateSync replaces the mutable fields of the sync with s.ID when its
// stored Version equals sy.Version, then sets sy.Version to the next one.
// A stale version is store.ErrConflict; a missing sync
// store.ErrNotFound.
func (s *Store) UpdateSync(ctx context.Context, sy *functions.Schedule) error {
	id, err := uuidArg("sync id", sy.ID)
	if err != nil {
		return err
	}
	run, err := optionalUUIDArg("run id", sy.RunID)
	if err != nil {
		return err
	}
	var version int64
	err = s.get(ctx, qUpdateSync, &version, id, sy.Version, sy.Frequency, sy.Interval.Milliseconds(), sy.Paused,
		sy.NextRunAt, sy.LastSyncDate, run, sy.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		var exists bool
		if err := s.get(ctx, qSyncExists, &exists, id); err != nil {
			return dbErr(ctx, "update sync", err, nil)
		}
		if !exists {
			return notFound("sync %s", id)
		}
		return conflict("sync %s: version %d is stale", id, sy.Version)
	}
	if err != nil {
		return dbErr(ctx, "update sync", err, nil)
	}
	sy.Version = version
	return nil
}

// DeleteSync deletes a sync and its runs, or returns store.ErrNotFound.
func (s *Store) DeleteSync(ctx context.Context, id string) error {
	id, err := uuidArg("sync id", id)
	if err != nil {
		return err
	}
	res, err := s.exec(ctx, qDeleteSync, id)
	if err != nil {
		return dbErr(ctx, "delete sync", err, nil)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("sync %s", id)
	}
	return nil
}

var qCountSyncVariants = newQuery(`SELECT count(*) FROM {s}.syncs
	WHERE connection_id = $1 AND name = $2 AND variant <> $3`)

// CountSyncVariants counts the syncs of a connection and sync name whose
// variant is not functions.BaseVariant.
func (s *Store) CountSyncVariants(ctx context.Context, connectionID int64, name string) (int, error) {
	var n int
	if err := s.get(ctx, qCountSyncVariants, &n, connectionID, name, functions.BaseVariant); err != nil {
		return 0, dbErr(ctx, "count sync variants", err, nil)
	}
	return n, nil
}

// qClaimDueSyncs reads syncs_due_idx in order: its predicate is implied by
// the conditions, so due syncs are one index range, whatever the number of
// paused, running or later syncs.
var qClaimDueSyncs = newQuery(`SELECT ` + syncColumns + ` FROM {s}.syncs
	WHERE NOT paused AND run_id IS NULL AND next_run_at IS NOT NULL AND next_run_at <= $1
	ORDER BY next_run_at, id
	LIMIT $2
	FOR UPDATE SKIP LOCKED`)

// ClaimDueSyncs locks up to limit syncs (all when limit is 0 or less) that
// are not paused, have no RunID and are due at now, earliest due first,
// skipping those another transaction has locked, and returns them. The
// locks last until the transaction of ctx ends: it must be called inside
// [Store.WithTx], and returns an error outside one.
func (s *Store) ClaimDueSyncs(ctx context.Context, now time.Time, limit int) ([]*functions.Schedule, error) {
	if _, ok := liveTx(ctx, s.raw); !ok {
		return nil, errors.New("postgres: ClaimDueSyncs must be called inside WithTx")
	}
	out := []*functions.Schedule{}
	if err := s.queryRows(ctx, qClaimDueSyncs, scanSyncs(&out), now, limitArg(limit)); err != nil {
		return nil, dbErr(ctx, "claim due syncs", err, nil)
	}
	return out, nil
}

// ---- Sync runs ----

const runColumns = `id, sync_id, status, type, trigger, reset, empty_cache, log_id, created_at, started_at,
	finished_at, heartbeat_at, cancel_requested, supersedes, result, checkpoint_from, checkpoint_to,
	checkpoints_touched, error, version`

type runRow struct {
	ID                 string
	SyncID             string
	Status             string
	Type               string
	Trigger            string
	Reset              bool
	EmptyCache         bool
	LogID              string
	CreatedAt          time.Time
	StartedAt          *time.Time
	FinishedAt         *time.Time
	HeartbeatAt        *time.Time
	CancelRequested    bool
	Supersedes         sql.NullString
	Result             []byte
	CheckpointFrom     []byte
	CheckpointTo       []byte
	CheckpointsTouched bool
	Error              []byte
	Version            int64
}

// scanTargets lists the fields in the order of runColumns.
func (r *runRow) scanTargets() []any {
	return []any{&r.ID, &r.SyncID, &r.Status, &r.Type, &r.Trigger, &r.Reset, &r.EmptyCache, &r.LogID,
		&r.CreatedAt, &r.StartedAt, &r.FinishedAt, &r.HeartbeatAt, &r.CancelRequested, &r.Supersedes,
		&r.Result, &r.CheckpointFrom, &r.CheckpointTo, &r.CheckpointsTouched, &r.Error, &r.Version}
}

func (r *runRow) run() (*functions.SyncRun, error) {
	run := &functions.SyncRun{
		ID:                 r.ID,
		SyncID:             r.SyncID,
		Status:             r.Status,
		Type:               r.Type,
		Trigger:            r.Trigger,
		Reset:              r.Reset,
		EmptyCache:         r.EmptyCache,
		LogID:              r.LogID,
		CreatedAt:          r.CreatedAt.UTC(),
		StartedAt:          utcPtr(r.StartedAt),
		FinishedAt:         utcPtr(r.FinishedAt),
		HeartbeatAt:        utcPtr(r.HeartbeatAt),
		CancelRequested:    r.CancelRequested,
		Supersedes:         r.Supersedes.String,
		CheckpointFrom:     rawJSON(r.CheckpointFrom),
		CheckpointTo:       rawJSON(r.CheckpointTo),
		CheckpointsTouched: r.CheckpointsTouched,
		Error:              rawJSON(r.Error),
		Version:            r.Version,
	}
	if err := decodeJSON("result", r.Result, &run.Result); err != nil {
		return nil, err
	}
	return run, nil
}

// scanRuns returns a scan function of queryRows that calls add with each
// run.
func scanRuns(add func(*functions.SyncRun)) func(rows *sql.Rows) error {
	return func(rows *sql.Rows) error {
		var r runRow
		if err := rows.Scan(r.scanTargets()...); err != nil {
			return err
		}
		run, err := r.run()
		if err != nil {
			return err
		}
		add(run)
		return nil
	}
}

// runArgs are the arguments of a run's mutable columns, from $3 on, in the
// order of qCreateSyncRun and qUpdateSyncRun.
func runArgs(r *functions.SyncRun) ([]any, error) {
	supersedes, err := optionalUUIDArg("supersedes", r.Supersedes)
	if err != nil {
		return nil, err
	}
	result, err := jsonArg("result", r.Result)
	if err != nil {
		return nil, err
	}
	return []any{r.Status, r.Type, r.Reset, r.EmptyCache, r.LogID, r.StartedAt, r.FinishedAt, r.HeartbeatAt,
		r.CancelRequested, supersedes, result, rawArg(r.CheckpointFrom), rawArg(r.CheckpointTo),
		r.CheckpointsTouched, rawArg(r.Error)}, nil
}

var (
	qCreateSyncRun = newQuery(`
	INSERT INTO {s}.sync_runs (id, sync_id, status, type, reset, empty_cache, log_id, started_at, finished_at,
		heartbeat_at, cancel_requested, supersedes, result, checkpoint_from, checkpoint_to, checkpoints_touched,
		error, trigger, created_at, version)
	SELECT $1::uuid, $2::uuid, $3::text, $4::text, $5::boolean, $6::boolean, $7::text, $8::timestamptz,
		$9::timestamptz, $10::timestamptz, $11::boolean, $12::uuid, $13::jsonb, $14::jsonb, $15::jsonb,
		$16::boolean, $17::jsonb, $18::text, $19::timestamptz, 1
	WHERE EXISTS (SELECT 1 FROM {s}.syncs WHERE id = $2)
	ON CONFLICT (id) DO NOTHING
	RETURNING version`)
	qGetSyncRun    = newQuery(`SELECT ` + runColumns + ` FROM {s}.sync_runs WHERE id = $1`)
	qUpdateSyncRun = newQuery(`
	UPDATE {s}.sync_runs SET status = $3, type = $4, reset = $5, empty_cache = $6, log_id = $7,
		started_at = $8, finished_at = $9, heartbeat_at = $10, cancel_requested = $11, supersedes = $12,
		result = $13, checkpoint_from = $14, checkpoint_to = $15, checkpoints_touched = $16, error = $17,
		version = version + 1
	WHERE id = $1 AND version = $2
	RETURNING version`)
	qSyncRunExists = newQuery(`SELECT EXISTS (SELECT 1 FROM {s}.sync_runs WHERE id = $1)`)
)

// CreateSyncRun stores a new run (ID set by the caller, a UUID) and sets
// its Version to 1. An ID already stored is store.ErrConflict; a missing
// sync store.ErrNotFound.
func (s *Store) CreateSyncRun(ctx context.Context, r *functions.SyncRun) error {
	id, err := uuidArg("run id", r.ID)
	if err != nil {
		return err
	}
	syncID, err := uuidArg("sync id", r.SyncID)
	if err != nil {
		return err
	}
	args, err := runArgs(r)
	if err != nil {
		return err
	}
	var version int64
	err = s.get(ctx, qCreateSyncRun, &version, append(append([]any{id, syncID}, args...), r.Trigger, r.CreatedAt)...)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.GetSyncByID(ctx, syncID); err != nil {
			return err
		}
		return conflict("sync run %s", id)
	}
	if err != nil {
		return dbErr(ctx, "create sync run", err, store.ErrNotFound)
	}
	r.ID, r.SyncID, r.Version = id, syncID, version
	return nil
}

// GetSyncRun returns a run, or store.ErrNotFound.
func (s *Store) GetSyncRun(ctx context.Context, id string) (*functions.SyncRun, error) {
	id, err := uuidArg("run id", id)
	if err != nil {
		return nil, err
	}
	var r runRow
	err = s.get(ctx, qGetSyncRun, &r, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("sync run %s", id)
	}
	if err != nil {
		return nil, dbErr(ctx, "get sync run", err, nil)
	}
	return r.run()
}

// UpdateSyncRun replaces the mutable fields of the run with r.ID when its
// stored Version equals r.Version, then sets r.Version to the next one. A
// stale version is store.ErrConflict; a missing run store.ErrNotFound.
func (s *Store) UpdateSyncRun(ctx context.Context, r *functions.SyncRun) error {
	id, err := uuidArg("run id", r.ID)
	if err != nil {
		return err
	}
	args, err := runArgs(r)
	if err != nil {
		return err
	}
	var version int64
	err = s.get(ctx, qUpdateSyncRun, &version, append([]any{id, r.Version}, args...)...)
	if errors.Is(err, sql.ErrNoRows) {
		var exists bool
		if err := s.get(ctx, qSyncRunExists, &exists, id); err != nil {
			return dbErr(ctx, "update sync run", err, nil)
		}
		if !exists {
			return notFound("sync run %s", id)
		}
		return conflict("sync run %s: version %d is stale", id, r.Version)
	}
	if err != nil {
		return dbErr(ctx, "update sync run", err, nil)
	}
	r.Version = version
	return nil
}

var (
	qLatestSyncRuns = newQuery(`SELECT ` + runColumns + `
	FROM unnest($1::uuid[]) AS k(sid)
	CROSS JOIN LATERAL (SELECT ` + runColumns + ` FROM {s}.sync_runs WHERE sync_id = k.sid
		ORDER BY created_at DESC, id DESC LIMIT 1) AS r`)
	qLatestFinishedSyncRuns = newQuery(`SELECT ` + runColumns + `
	FROM unnest($1::uuid[]) AS k(sid)
	CROSS JOIN LATERAL (SELECT ` + runColumns + ` FROM {s}.sync_runs
		WHERE sync_id = k.sid AND status IN ('SUCCESS', 'STOPPED')
		ORDER BY created_at DESC, id DESC LIMIT 1) AS r`)
)

// LatestSyncRuns returns the latest run (by CreatedAt, then ID) of each of
// the syncs, by sync ID; a sync without runs is absent.
func (s *Store) LatestSyncRuns(ctx context.Context, syncIDs []string) (map[string]*functions.SyncRun, error) {
	return s.latestRuns(ctx, qLatestSyncRuns, syncIDs)
}

// LatestFinishedSyncRuns is LatestSyncRuns among the runs that finished
// (SUCCESS or STOPPED).
func (s *Store) LatestFinishedSyncRuns(ctx context.Context, syncIDs []string) (map[string]*functions.SyncRun, error) {
	return s.latestRuns(ctx, qLatestFinishedSyncRuns, syncIDs)
}

func (s *Store) latestRuns(ctx context.Context, q *query, syncIDs []string) (map[string]*functions.SyncRun, error) {
	out := map[string]*functions.SyncRun{}
	if len(syncIDs) == 0 {
		return out, nil
	}
	// Answers are keyed by the IDs as given.
	given := make(map[string]string, len(syncIDs))
	ids := make([]string, 0, len(syncIDs))
	for _, raw := range syncIDs {
		id, err := uuidArg("sync id", raw)
		if err != nil {
			return nil, err
		}
		if _, dup := given[id]; !dup {
			ids = append(ids, id)
		}
		given[id] = raw
	}
	err := s.queryRows(ctx, q, scanRuns(func(r *functions.SyncRun) { out[given[r.SyncID]] = r }), pq.Array(ids))
	if err != nil {
		return nil, dbErr(ctx, "latest sync runs", err, nil)
	}
	return out, nil
}

var (
	// qStaleSyncRuns reads sync_runs_stale_idx in order.
	qStaleSyncRuns = newQuery(`SELECT ` + runColumns + ` FROM {s}.sync_runs
	WHERE status IN ('QUEUED', 'RUNNING')
		AND (CASE WHEN status = 'RUNNING' THEN heartbeat_at ELSE created_at END) < $1
	ORDER BY (CASE WHEN status = 'RUNNING' THEN heartbeat_at ELSE created_at END), id
	LIMIT $2`)
	// qDeleteSyncRunsBefore keeps the latest finished run of each sync:
	// a candidate must have a later finished run.
	qDeleteSyncRunsBefore = newQuery(`
	DELETE FROM {s}.sync_runs WHERE id IN (
		SELECT r.id FROM {s}.sync_runs r
		WHERE r.status IN ('SUCCESS', 'STOPPED') AND r.finished_at < $1
			AND EXISTS (SELECT 1 FROM {s}.sync_runs l
				WHERE l.sync_id = r.sync_id AND l.status IN ('SUCCESS', 'STOPPED')
					AND (l.created_at, l.id) > (r.created_at, r.id))
		ORDER BY r.finished_at, r.id
		LIMIT $2
		FOR UPDATE SKIP LOCKED)`)
)

// StaleSyncRuns returns up to limit runs (all when limit is 0 or less)
// that are RUNNING with a HeartbeatAt before before, or QUEUED with a
// CreatedAt before before, the oldest first. A RUNNING run without a
// HeartbeatAt is not stale.
func (s *Store) StaleSyncRuns(ctx context.Context, before time.Time, limit int) ([]*functions.SyncRun, error) {
	out := []*functions.SyncRun{}
	err := s.queryRows(ctx, qStaleSyncRuns, scanRuns(func(r *functions.SyncRun) { out = append(out, r) }),
		before, limitArg(limit))
	if err != nil {
		return nil, dbErr(ctx, "stale sync runs", err, nil)
	}
	return out, nil
}

// DeleteSyncRunsBefore deletes up to limit (all when limit is 0 or less)
// finished runs that finished before before and are not the latest
// finished run of their sync, those that finished first first, and returns
// how many. Runs another transaction is deleting are skipped.
func (s *Store) DeleteSyncRunsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := s.exec(ctx, qDeleteSyncRunsBefore, before, limitArg(limit))
	if err != nil {
		return 0, dbErr(ctx, "delete sync runs", err, nil)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// ---- Checkpoints ----

var (
	qGetCheckpoint = newQuery(`SELECT value, version, updated_at FROM {s}.checkpoints
	WHERE connection_id = $1 AND key = $2`)
	qInsertCheckpoint = newQuery(`
	INSERT INTO {s}.checkpoints (connection_id, key, value, version, updated_at)
	SELECT $1::bigint, $2::text, $3::jsonb, 1, $4::timestamptz
	WHERE EXISTS (SELECT 1 FROM {s}.connections WHERE id = $1)
	ON CONFLICT DO NOTHING
	RETURNING version`)
	qUpdateCheckpoint = newQuery(`
	UPDATE {s}.checkpoints SET value = $3, updated_at = $4, version = version + 1
	WHERE connection_id = $1 AND key = $2 AND version = $5
	RETURNING version`)
	qConnectionIDExists = newQuery(`SELECT EXISTS (SELECT 1 FROM {s}.connections WHERE id = $1)`)
	// qDeleteCheckpoint deletes any version when $3 is 0.
	qDeleteCheckpoint = newQuery(`DELETE FROM {s}.checkpoints
	WHERE connection_id = $1 AND key = $2 AND ($3::bigint = 0 OR version = $3::bigint)`)
	qCheckpointExists = newQuery(`SELECT EXISTS (SELECT 1 FROM {s}.checkpoints
	WHERE connection_id = $1 AND key = $2)`)
	qDeleteCheckpoints = newQuery(`DELETE FROM {s}.checkpoints
	WHERE connection_id = $1 AND starts_with(key, $2)`)
)

// GetCheckpoint returns a checkpoint, or store.ErrNotFound.
func (s *Store) GetCheckpoint(ctx context.Context, connectionID int64, key string) (*functions.StoredCheckpoint, error) {
	var r checkpointRow
	err := s.get(ctx, qGetCheckpoint, &r, connectionID, key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("checkpoint %q of connection %d", key, connectionID)
	}
	if err != nil {
		return nil, dbErr(ctx, "get checkpoint", err, nil)
	}
	return &functions.StoredCheckpoint{Value: rawJSON(r.Value), Version: r.Version, UpdatedAt: r.UpdatedAt.UTC()}, nil
}

type checkpointRow struct {
	Value     []byte
	Version   int64
	UpdatedAt time.Time
}

// scanTargets lists the columns of qGetCheckpoint.
func (r *checkpointRow) scanTargets() []any { return []any{&r.Value, &r.Version, &r.UpdatedAt} }

// PutCheckpoint writes a checkpoint when its stored version is expected
// (0: none is stored) and returns the new version; otherwise it returns
// store.ErrConflict and writes nothing. A new checkpoint of a missing
// connection is store.ErrNotFound; an empty value store.ErrInvalid.
func (s *Store) PutCheckpoint(ctx context.Context, connectionID int64, key string, value json.RawMessage, expected int64, now time.Time) (int64, error) {
	if len(value) == 0 {
		return 0, fmt.Errorf("postgres: checkpoint %q: %w: no value", key, store.ErrInvalid)
	}
	var version int64
	if expected == 0 {
		err := s.get(ctx, qInsertCheckpoint, &version, connectionID, key, string(value), now)
		if errors.Is(err, sql.ErrNoRows) {
			var exists bool
			if err := s.get(ctx, qConnectionIDExists, &exists, connectionID); err != nil {
				return 0, dbErr(ctx, "put checkpoint", err, nil)
			}
			if !exists {
				return 0, notFound("connection %d", connectionID)
			}
			return 0, conflict("checkpoint %q: already stored", key)
		}
		if err != nil {
			return 0, dbErr(ctx, "put checkpoint", err, store.ErrNotFound)
		}
		return version, nil
	}
	err := s.get(ctx, qUpdateCheckpoint, &version, connectionID, key, string(value), now, expected)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, conflict("checkpoint %q: version %d is not the stored one", key, expected)
	}
	if err != nil {
		return 0, dbErr(ctx, "put checkpoint", err, nil)
	}
	return version, nil
}

// DeleteCheckpoint deletes a checkpoint when its stored version is
// expected (0: any); a stale version is store.ErrConflict, a missing
// checkpoint is no error.
func (s *Store) DeleteCheckpoint(ctx context.Context, connectionID int64, key string, expected int64) error {
	res, err := s.exec(ctx, qDeleteCheckpoint, connectionID, key, expected)
	if err != nil {
		return dbErr(ctx, "delete checkpoint", err, nil)
	}
	if n, _ := res.RowsAffected(); n > 0 || expected == 0 {
		return nil
	}
	var exists bool
	if err := s.get(ctx, qCheckpointExists, &exists, connectionID, key); err != nil {
		return dbErr(ctx, "delete checkpoint", err, nil)
	}
	if exists {
		return conflict("checkpoint %q: version %d is stale", key, expected)
	}
	return nil
}

// DeleteCheckpoints deletes every checkpoint of the connection whose key
// starts with prefix, and returns how many.
func (s *Store) DeleteCheckpoints(ctx context.Context, connectionID int64, prefix string) (int, error) {
	res, err := s.exec(ctx, qDeleteCheckpoints, connectionID, prefix)
	if err != nil {
		return 0, dbErr(ctx, "delete checkpoints", err, nil)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// ---- Action tasks ----

const taskColumns = `id, environment_id, connection_id, integration_key, connection_ref, action_name,
	sealed_input, status, attempts, max_retries, sealed_output, sealed_error, error_status, log_id,
	created_at, updated_at, finished_at, version`

type taskRow functions.ActionTask

// scanTargets lists the fields in the order of taskColumns.
func (r *taskRow) scanTargets() []any {
	return []any{&r.ID, &r.EnvironmentID, &r.ConnectionID, &r.Integration, &r.ConnectionRef, &r.ActionName,
		&r.SealedInput, &r.Status, &r.Attempts, &r.MaxRetries, &r.SealedOutput, &r.SealedError, &r.ErrorStatus,
		&r.LogID, &r.CreatedAt, &r.UpdatedAt, &r.FinishedAt, &r.Version}
}

func (r *taskRow) task() *functions.ActionTask {
	t := functions.ActionTask(*r)
	t.CreatedAt, t.UpdatedAt, t.FinishedAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC(), utcPtr(t.FinishedAt)
	return &t
}

var (
	qCreateActionTask = newQuery(`
	INSERT INTO {s}.action_tasks (` + taskColumns + `)
	SELECT $1::uuid, $2::bigint, $3::bigint, $4::text, $5::text, $6::text, $7::text, $8::text, $9::integer,
		$10::integer, $11::text, $12::text, $13::integer, $14::text, $15::timestamptz, $16::timestamptz,
		$17::timestamptz, 1
	WHERE EXISTS (SELECT 1 FROM {s}.environments WHERE id = $2)
	ON CONFLICT (id) DO NOTHING
	RETURNING version`)
	qGetActionTask = newQuery(`SELECT ` + taskColumns + ` FROM {s}.action_tasks
	WHERE id = $1 AND environment_id = $2`)
	qUpdateActionTask = newQuery(`
	UPDATE {s}.action_tasks SET status = $4, attempts = $5, sealed_output = $6, sealed_error = $7,
		error_status = $8, log_id = $9, updated_at = $10, finished_at = $11, version = version + 1
	WHERE id = $1 AND environment_id = $2 AND version = $3
	RETURNING version`)
	qActionTaskExists = newQuery(`SELECT EXISTS (SELECT 1 FROM {s}.action_tasks
	WHERE id = $1 AND environment_id = $2)`)
	// qStaleActionTasks reads action_tasks_running_idx in order.
	qStaleActionTasks = newQuery(`SELECT ` + taskColumns + ` FROM {s}.action_tasks
	WHERE status = 'RUNNING' AND updated_at < $1
	ORDER BY updated_at, id
	LIMIT $2`)
	qDeleteActionTasksBefore = newQuery(`
	DELETE FROM {s}.action_tasks WHERE id IN (
		SELECT id FROM {s}.action_tasks WHERE finished_at < $1
		ORDER BY finished_at, id
		LIMIT $2
		FOR UPDATE SKIP LOCKED)`)
)

// CreateActionTask stores a new task (ID set by the caller, a UUID) and
// sets its Version to 1. An ID already stored is store.ErrConflict; a
// missing environment store.ErrNotFound.
func (s *Store) CreateActionTask(ctx context.Context, t *functions.ActionTask) error {
	id, err := uuidArg("action task id", t.ID)
	if err != nil {
		return err
	}
	var version int64
	err = s.get(ctx, qCreateActionTask, &version, id, t.EnvironmentID, t.ConnectionID, t.Integration,
		t.ConnectionRef, t.ActionName, t.SealedInput, t.Status, t.Attempts, t.MaxRetries, t.SealedOutput,
		t.SealedError, t.ErrorStatus, t.LogID, t.CreatedAt, t.UpdatedAt, t.FinishedAt)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.GetEnvironment(ctx, t.EnvironmentID); err != nil {
			return err
		}
		return conflict("action task %s", id)
	}
	if err != nil {
		return dbErr(ctx, "create action task", err, store.ErrNotFound)
	}
	t.ID, t.Version = id, version
	return nil
}

// GetActionTask returns a task of the environment, or store.ErrNotFound.
func (s *Store) GetActionTask(ctx context.Context, environmentID int64, id string) (*functions.ActionTask, error) {
	id, err := uuidArg("action task id", id)
	if err != nil {
		return nil, err
	}
	var r taskRow
	err = s.get(ctx, qGetActionTask, &r, id, environmentID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("action task %s", id)
	}
	if err != nil {
		return nil, dbErr(ctx, "get action task", err, nil)
	}
	return r.task(), nil
}

// UpdateActionTask replaces the mutable fields of the task of
// t.EnvironmentID with t.ID when its stored Version equals t.Version, then
// sets t.Version to the next one. A stale version is store.ErrConflict; a
// missing task (or one of another environment) store.ErrNotFound.
func (s *Store) UpdateActionTask(ctx context.Context, t *functions.ActionTask) error {
	id, err := uuidArg("action task id", t.ID)
	if err != nil {
		return err
	}
	var version int64
	err = s.get(ctx, qUpdateActionTask, &version, id, t.EnvironmentID, t.Version, t.Status, t.Attempts,
		t.SealedOutput, t.SealedError, t.ErrorStatus, t.LogID, t.UpdatedAt, t.FinishedAt)
	if errors.Is(err, sql.ErrNoRows) {
		var exists bool
		if err := s.get(ctx, qActionTaskExists, &exists, id, t.EnvironmentID); err != nil {
			return dbErr(ctx, "update action task", err, nil)
		}
		if !exists {
			return notFound("action task %s", id)
		}
		return conflict("action task %s: version %d is stale", id, t.Version)
	}
	if err != nil {
		return dbErr(ctx, "update action task", err, nil)
	}
	t.Version = version
	return nil
}

// StaleActionTasks returns up to limit tasks (all when limit is 0 or
// less) that are RUNNING with an UpdatedAt before before, the oldest
// first.
func (s *Store) StaleActionTasks(ctx context.Context, before time.Time, limit int) ([]*functions.ActionTask, error) {
	out := []*functions.ActionTask{}
	err := s.queryRows(ctx, qStaleActionTasks, func(rows *sql.Rows) error {
		var r taskRow
		if err := rows.Scan(r.scanTargets()...); err != nil {
			return err
		}
		out = append(out, r.task())
		return nil
	}, before, limitArg(limit))
	if err != nil {
		return nil, dbErr(ctx, "stale action tasks", err, nil)
	}
	return out, nil
}

// DeleteActionTasksBefore deletes up to limit tasks (all when limit is 0
// or less) that finished before before, those that finished first first,
// and returns how many. Tasks another transaction is deleting are
// skipped.
func (s *Store) DeleteActionTasksBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := s.exec(ctx, qDeleteActionTasksBefore, before, limitArg(limit))
	if err != nil {
		return 0, dbErr(ctx, "delete action tasks", err, nil)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
