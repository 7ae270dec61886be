package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/internal/uuid"
	"github.com/embedauth/connect/store"
)

// Deployed functions, their syncs and runs, checkpoints and async action
// tasks (functions.FunctionStore, SyncStore, CheckpointStore and
// ActionStore), in the tables of migration 003.

// ---- Helpers of the functions group ----
//
// Their names start with fn so as not to collide with the helpers of the
// other groups of the Store, written beside these.

// fnNotFound, fnConflict and fnInvalid make errors that match
// store.ErrNotFound, store.ErrConflict and store.ErrInvalid.
func fnNotFound(format string, args ...any) error {
	return fmt.Errorf("sqlite: "+format+": %w", append(args, store.ErrNotFound)...)
}

func fnConflict(format string, args ...any) error {
	return fmt.Errorf("sqlite: "+format+": %w", append(args, store.ErrConflict)...)
}

func fnInvalid(format string, args ...any) error {
	return fmt.Errorf("sqlite: "+format+": %w", append(args, store.ErrInvalid)...)
}

// fnLimit is the LIMIT of a call's limit: -1, no limit, when it is 0 or
// less.
func fnLimit(limit int) int {
	if limit <= 0 {
		return -1
	}
	return limit
}

// fnUUID returns id in canonical form (lower case), or store.ErrInvalid
// when it is not a UUID, as Postgres' uuid type reads one.
func fnUUID(field, id string) (string, error) {
	c, ok := uuid.Parse(id)
	if !ok {
		return "", fnInvalid("%s %q: not a UUID", field, id)
	}
	return c, nil
}

// fnOptionalUUID is fnUUID for a column where "" is NULL.
func fnOptionalUUID(field, id string) (sql.NullString, error) {
	if id == "" {
		return sql.NullString{}, nil
	}
	c, err := fnUUID(field, id)
	return sql.NullString{String: c, Valid: err == nil}, err
}

// fnNULEscape is how JSON writes U+0000, which Postgres' jsonb refuses.
var fnNULEscape = []byte(`\u0000`)

// fnRawJSONArg checks a JSON value for a TEXT column and returns it as it is:
// NULL when empty. JSON that is not valid, not UTF-8 or holds U+0000 is
// store.ErrInvalid, as jsonb refuses it.
func fnRawJSONArg(field string, raw json.RawMessage) (sql.NullString, error) {
	if len(raw) == 0 {
		return sql.NullString{}, nil
	}
	if !utf8.Valid(raw) || !json.Valid(raw) {
		return sql.NullString{}, fnInvalid("%s: not valid JSON", field)
	}
	if bytes.Contains(raw, fnNULEscape) {
		// Maybe an escaped backslash before "u0000": decode to know.
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return sql.NullString{}, fnInvalid("%s: %v", field, err)
		}
		if err := checkText(v); err != nil {
			return sql.NullString{}, fmt.Errorf("sqlite: %s: %w", field, err)
		}
	}
	return sql.NullString{String: string(raw), Valid: true}, nil
}

// fnRawJSON returns a JSON column: nil for NULL.
func fnRawJSON(v sql.NullString) json.RawMessage {
	if !v.Valid {
		return nil
	}
	return json.RawMessage(v.String)
}

// fnCanonicalJSON encodes v as JSON in one form for one value: object keys
// sorted, no spacing, numbers as written. Text that Postgres cannot store
// (invalid UTF-8, U+0000), in v's strings or in its raw JSON, is
// store.ErrInvalid.
func fnCanonicalJSON(field string, v any) (string, error) {
	if err := checkText(v); err != nil {
		return "", fmt.Errorf("sqlite: %s: %w", field, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fnInvalid("%s: %v", field, err)
	}
	if !utf8.Valid(b) {
		return "", fnInvalid("%s: text is not valid UTF-8", field)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var val any
	if err := d.Decode(&val); err != nil {
		return "", fnInvalid("%s: %v", field, err)
	}
	if err := checkText(val); err != nil {
		return "", fmt.Errorf("sqlite: %s: %w", field, err)
	}
	var out bytes.Buffer
	e := json.NewEncoder(&out)
	e.SetEscapeHTML(false)
	if err := e.Encode(val); err != nil {
		return "", fnInvalid("%s: %v", field, err)
	}
	return strings.TrimSuffix(out.String(), "\n"), nil
}

// fnScanner is what *sql.Row and *sql.Rows have in common.
type fnScanner interface {
	Scan(dest ...any) error
}

// fnQueryEach runs a query and calls scan for each row.
func fnQueryEach(ctx context.Context, q querier, op string, scan func(fnScanner) error, query string, args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return dbErr(ctx, op, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return dbErr(ctx, op, err)
		}
	}
	return dbErr(ctx, op, rows.Err())
}

// fnPlaceholders returns n comma-separated rows of the form row.
func fnPlaceholders(row string, n int) string {
	var b strings.Builder
	b.Grow(n * (len(row) + 1))
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(row)
	}
	return b.String()
}

// ---- Functions ----

const functionColumns = `id, environment_id, integration_key, kind, name, runtime, version, source,
	enabled, definition, code, source_code, sdk_version, deployed_at, updated_at`

// scanFunction reads a row of functionColumns.
func scanFunction(r fnScanner) (*functions.Function, error) {
	f := &functions.Function{}
	var kind, def string
	var deployed, updated int64
	err := r.Scan(&f.ID, &f.EnvironmentID, &f.Integration, &kind, &f.Name, &f.Runtime, &f.Version, &f.Source,
		&f.Enabled, &def, &f.Code, &f.SourceCode, &f.SDKVersion, &deployed, &updated)
	if err != nil {
		return nil, err
	}
	f.Kind, f.DeployedAt, f.UpdatedAt = functions.Kind(kind), fromMicros(deployed), fromMicros(updated)
	if f.Code == nil {
		f.Code = []byte{}
	}
	if f.SourceCode == nil {
		f.SourceCode = []byte{}
	}
	if err := json.Unmarshal([]byte(def), &f.Definition); err != nil {
		return nil, fmt.Errorf("sqlite: decode definition: %w", err)
	}
	return f, nil
}

// nextVersion is the version of a changed function: the one given, else
// functions.NextVersion of the stored one.
func nextVersion(stored, given string) string {
	if given != "" {
		return given
	}
	return functions.NextVersion(stored)
}

const functionVersionColumns = `environment_id, integration_key, kind, name, version, runtime, source,
	sdk_version, definition, code, source_code, deployed_at`

// keepFunctionVersion copies the function of an identity into its
// versions, and deletes those beyond the newest
// functions.FunctionVersionsKept.
func keepFunctionVersion(ctx context.Context, q querier, environmentID int64, integration string, kind functions.Kind, name string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO function_versions (`+functionVersionColumns+`)
	SELECT `+functionVersionColumns+` FROM functions
	WHERE environment_id = ? AND integration_key = ? AND kind = ? AND name = ?`, environmentID, integration, string(kind), name)
	if err != nil {
		return dbErr(ctx, "keep function version", err)
	}
	_, err = q.ExecContext(ctx, `DELETE FROM function_versions
	WHERE environment_id = ?1 AND integration_key = ?2 AND kind = ?3 AND name = ?4
		AND id < (SELECT min(id) FROM (SELECT id FROM function_versions
			WHERE environment_id = ?1 AND integration_key = ?2 AND kind = ?3 AND name = ?4 ORDER BY id DESC LIMIT ?5))`,
		environmentID, integration, string(kind), name, functions.FunctionVersionsKept)
	return dbErr(ctx, "prune function versions", err)
}

// PutFunction creates f, or replaces the function of its identity when
// anything but its version differs, or its version differs and f has one,
// copying the replaced one into its versions; see
// functions.FunctionStore. Definitions are compared as JSON values
// (stored in one form for one value). A missing integration is
// store.ErrNotFound; a function registered in Go replaced by one of
// another runtime, or the reverse, store.ErrConflict.
func (s *Store) PutFunction(ctx context.Context, f *functions.Function) (bool, error) {
	if err := checkText(f); err != nil {
		return false, err
	}
	def, err := fnCanonicalJSON("definition", f.Definition)
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
		q := s.writer(ctx)
		var id int64
		var runtime, version, src, oldDef, sdk string
		var oldCode, oldSource []byte
		err := q.QueryRowContext(ctx, `SELECT id, runtime, version, source, definition, code, source_code, sdk_version
		FROM functions WHERE environment_id = ? AND integration_key = ? AND kind = ? AND name = ?`,
			f.EnvironmentID, f.Integration, string(f.Kind), f.Name).Scan(&id, &runtime, &version, &src, &oldDef, &oldCode,
			&oldSource, &sdk)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			version := f.Version
			if version == "" {
				version = "1"
			}
			stored, err = scanFunction(q.QueryRowContext(ctx, `INSERT INTO functions (environment_id, integration_key, kind,
				name, runtime, version, source, enabled, definition, code, source_code, sdk_version, deployed_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?)
			RETURNING `+functionColumns, f.EnvironmentID, f.Integration, string(f.Kind), f.Name, f.Runtime, version,
				f.Source, def, code, source, f.SDKVersion, micros(f.DeployedAt), micros(f.DeployedAt)))
			if isForeignKey(err) {
				return fnNotFound("integration %q of environment %d", f.Integration, f.EnvironmentID)
			}
			changed = true
			return dbErr(ctx, "put function", err)
		case err != nil:
			return dbErr(ctx, "put function", err)
		case (runtime == functions.GoRuntime) != (f.Runtime == functions.GoRuntime):
			return fnConflict("%s function %q of %q has runtime %q: it cannot be replaced by one of runtime %q",
				f.Kind, f.Name, f.Integration, runtime, f.Runtime)
		case runtime == f.Runtime && src == f.Source && bytes.Equal(oldCode, code) && bytes.Equal(oldSource, source) &&
			sdk == f.SDKVersion && oldDef == def && (f.Version == "" || f.Version == version):
			stored, err = scanFunction(q.QueryRowContext(ctx, `SELECT `+functionColumns+` FROM functions WHERE id = ?`, id))
			changed = false
			return dbErr(ctx, "put function", err)
		}
		if err := keepFunctionVersion(ctx, q, f.EnvironmentID, f.Integration, f.Kind, f.Name); err != nil {
			return err
		}
		stored, err = scanFunction(q.QueryRowContext(ctx, `UPDATE functions SET runtime = ?, version = ?, source = ?,
			definition = ?, code = ?, source_code = ?, sdk_version = ?, deployed_at = ?, updated_at = ?
		WHERE id = ?
		RETURNING `+functionColumns, f.Runtime, nextVersion(version, f.Version), f.Source, def, code, source,
			f.SDKVersion, micros(f.DeployedAt), micros(f.DeployedAt), id))
		changed = true
		return dbErr(ctx, "put function", err)
	})
	if err != nil {
		return false, err
	}
	*f = *stored
	return changed, nil
}

// GetFunction returns the function of an identity, or store.ErrNotFound.
func (s *Store) GetFunction(ctx context.Context, environmentID int64, integration string, kind functions.Kind, name string) (*functions.Function, error) {
	if err := checkText([]string{integration, string(kind), name}); err != nil {
		return nil, err
	}
	f, err := scanFunction(s.reader(ctx).QueryRowContext(ctx, `SELECT `+functionColumns+` FROM functions
	WHERE environment_id = ? AND integration_key = ? AND kind = ? AND name = ?`, environmentID, integration, string(kind), name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fnNotFound("%s function %q of %q", kind, name, integration)
	}
	if err != nil {
		return nil, dbErr(ctx, "get function", err)
	}
	return f, nil
}

// ListFunctions returns the functions of an environment, of one
// integration when integration is not empty, ordered by integration, kind,
// then name (byte order: the order of functions_identity_key).
func (s *Store) ListFunctions(ctx context.Context, environmentID int64, integration string) ([]*functions.Function, error) {
	if err := checkText(integration); err != nil {
		return nil, err
	}
	query := `SELECT ` + functionColumns + ` FROM functions WHERE environment_id = ?`
	args := []any{environmentID}
	if integration != "" {
		query += ` AND integration_key = ?`
		args = append(args, integration)
	}
	query += ` ORDER BY integration_key, kind, name`
	out := []*functions.Function{}
	err := fnQueryEach(ctx, s.reader(ctx), "list functions", func(r fnScanner) error {
		f, err := scanFunction(r)
		if err == nil {
			out = append(out, f)
		}
		return err
	}, query, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteFunction deletes the function of an identity, copying it into its
// versions, and, for a sync, every sync of the function (by environment,
// integration and name) with their runs (which the syncs' foreign key
// deletes); or returns store.ErrNotFound.
func (s *Store) DeleteFunction(ctx context.Context, environmentID int64, integration string, kind functions.Kind, name string) error {
	if err := checkText([]string{integration, string(kind), name}); err != nil {
		return err
	}
	return s.WithTx(ctx, func(ctx context.Context) error {
		q := s.writer(ctx)
		if err := keepFunctionVersion(ctx, q, environmentID, integration, kind, name); err != nil {
			return err
		}
		res, err := q.ExecContext(ctx, `DELETE FROM functions
		WHERE environment_id = ? AND integration_key = ? AND kind = ? AND name = ?`, environmentID, integration, string(kind), name)
		if err != nil {
			return dbErr(ctx, "delete function", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err != nil {
				return dbErr(ctx, "delete function", err)
			}
			// Nothing was kept either: the transaction rolls back.
			return fnNotFound("%s function %q of %q", kind, name, integration)
		}
		if kind != functions.KindSync {
			return nil
		}
		_, err = q.ExecContext(ctx, `DELETE FROM syncs WHERE environment_id = ? AND integration_key = ? AND name = ?`,
			environmentID, integration, name)
		return dbErr(ctx, "delete function's syncs", err)
	})
}

// ListFunctionVersions returns the earlier versions of a function, newest
// first.
func (s *Store) ListFunctionVersions(ctx context.Context, environmentID int64, integration string, kind functions.Kind, name string) ([]*functions.FunctionVersion, error) {
	if err := checkText([]string{integration, string(kind), name}); err != nil {
		return nil, err
	}
	out := []*functions.FunctionVersion{}
	err := fnQueryEach(ctx, s.reader(ctx), "list function versions", func(r fnScanner) error {
		v := &functions.FunctionVersion{}
		var k, def string
		var deployed int64
		if err := r.Scan(&v.EnvironmentID, &v.Integration, &k, &v.Name, &v.Version, &v.Runtime, &v.Source,
			&v.SDKVersion, &def, &v.Code, &v.SourceCode, &deployed); err != nil {
			return err
		}
		v.Kind, v.DeployedAt = functions.Kind(k), fromMicros(deployed)
		if err := json.Unmarshal([]byte(def), &v.Definition); err != nil {
			return fmt.Errorf("sqlite: decode definition: %w", err)
		}
		out = append(out, v)
		return nil
	}, `SELECT `+functionVersionColumns+` FROM function_versions
	WHERE environment_id = ? AND integration_key = ? AND kind = ? AND name = ? ORDER BY id DESC`,
		environmentID, integration, string(kind), name)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SetFunctionEnabled sets Enabled, or returns store.ErrNotFound. It leaves
// UpdatedAt as it is.
func (s *Store) SetFunctionEnabled(ctx context.Context, environmentID int64, integration string, kind functions.Kind, name string, enabled bool) error {
	if err := checkText([]string{integration, string(kind), name}); err != nil {
		return err
	}
	res, err := s.writer(ctx).ExecContext(ctx, `UPDATE functions SET enabled = ?
	WHERE environment_id = ? AND integration_key = ? AND kind = ? AND name = ?`, enabled, environmentID, integration, string(kind), name)
	if err != nil {
		return dbErr(ctx, "set function enabled", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return dbErr(ctx, "set function enabled", err)
	}
	if n == 0 {
		return fnNotFound("%s function %q of %q", kind, name, integration)
	}
	return nil
}

// ---- Syncs ----

const syncColumns = `id, environment_id, connection_id, integration_key, connection_ref, name, variant,
	frequency, interval_ms, paused, next_run_at, last_sync_date, run_id, created_at, updated_at, version`

// scanSync reads a row of syncColumns.
func scanSync(r fnScanner) (*functions.Schedule, error) {
	sy := &functions.Schedule{}
	var intervalMS, created, updated int64
	var next, last sql.NullInt64
	var run sql.NullString
	err := r.Scan(&sy.ID, &sy.EnvironmentID, &sy.ConnectionID, &sy.Integration, &sy.ConnectionRef, &sy.Name, &sy.Variant,
		&sy.Frequency, &intervalMS, &sy.Paused, &next, &last, &run, &created, &updated, &sy.Version)
	if err != nil {
		return nil, err
	}
	sy.Interval = time.Duration(intervalMS) * time.Millisecond
	sy.NextRunAt, sy.LastSyncDate, sy.RunID = timePtr(next), timePtr(last), run.String
	sy.CreatedAt, sy.UpdatedAt = fromMicros(created), fromMicros(updated)
	return sy, nil
}

// scanSyncs returns a scan function of fnQueryEach that appends to *out.
func scanSyncs(out *[]*functions.Schedule) func(fnScanner) error {
	return func(r fnScanner) error {
		sy, err := scanSync(r)
		if err == nil {
			*out = append(*out, sy)
		}
		return err
	}
}

// createSyncsChunk caps the syncs of one statement of CreateSyncs (15
// parameters each).
const createSyncsChunk = 500

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
	args := make([]any, 0, 15*len(syncs))
	index := make(map[string]int, len(syncs))
	var connIDs []int64
	conns := map[int64]bool{}
	for i, sy := range syncs {
		if err := checkText(sy); err != nil {
			return 0, err
		}
		run, err := fnOptionalUUID("run id", sy.RunID)
		if err != nil {
			return 0, err
		}
		id := uuid.New()
		index[id] = i
		args = append(args, id, sy.EnvironmentID, sy.ConnectionID, sy.Integration, sy.ConnectionRef, sy.Name, sy.Variant,
			sy.Frequency, sy.Interval.Milliseconds(), sy.Paused, nullMicros(sy.NextRunAt), nullMicros(sy.LastSyncDate), run,
			micros(sy.CreatedAt), micros(sy.CreatedAt))
		if !conns[sy.ConnectionID] {
			conns[sy.ConnectionID] = true
			connIDs = append(connIDs, sy.ConnectionID)
		}
	}
	var created []string
	err := s.WithTx(ctx, func(ctx context.Context) error {
		created = created[:0]
		q := s.writer(ctx)
		ids, err := json.Marshal(connIDs)
		if err != nil {
			return err
		}
		var found int
		err = q.QueryRowContext(ctx, `SELECT count(*) FROM connections WHERE id IN (SELECT value FROM json_each(?))`,
			string(ids)).Scan(&found)
		if err != nil {
			return dbErr(ctx, "create syncs", err)
		}
		if found != len(connIDs) {
			return fnNotFound("connection of a sync")
		}
		for lo := 0; lo < len(syncs); lo += createSyncsChunk {
			n := min(createSyncsChunk, len(syncs)-lo)
			err := fnQueryEach(ctx, q, "create syncs", func(r fnScanner) error {
				var id string
				err := r.Scan(&id)
				created = append(created, id)
				return err
			}, `INSERT INTO syncs (`+syncColumns+`)
			VALUES `+fnPlaceholders("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)", n)+`
			ON CONFLICT (connection_id, name, variant) DO NOTHING
			RETURNING id`, args[15*lo:15*(lo+n)]...)
			if err != nil {
				if isForeignKey(err) {
					return fnNotFound("connection of a sync")
				}
				return err
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

// GetSync returns a sync by identity, or store.ErrNotFound.
func (s *Store) GetSync(ctx context.Context, connectionID int64, name, variant string) (*functions.Schedule, error) {
	if err := checkText([]string{name, variant}); err != nil {
		return nil, err
	}
	sy, err := scanSync(s.reader(ctx).QueryRowContext(ctx, `SELECT `+syncColumns+` FROM syncs
	WHERE connection_id = ? AND name = ? AND variant = ?`, connectionID, name, variant))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fnNotFound("sync %q (%s) of connection %d", name, variant, connectionID)
	}
	if err != nil {
		return nil, dbErr(ctx, "get sync", err)
	}
	return sy, nil
}

// GetSyncByID returns a sync by ID, or store.ErrNotFound. An ID that is
// not a UUID is store.ErrInvalid.
func (s *Store) GetSyncByID(ctx context.Context, id string) (*functions.Schedule, error) {
	id, err := fnUUID("sync id", id)
	if err != nil {
		return nil, err
	}
	sy, err := scanSync(s.reader(ctx).QueryRowContext(ctx, `SELECT `+syncColumns+` FROM syncs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fnNotFound("sync %s", id)
	}
	if err != nil {
		return nil, dbErr(ctx, "get sync", err)
	}
	return sy, nil
}

// ListSyncs returns the syncs matching f, by ID. An EnvironmentID of 0 is
// store.ErrInvalid; a Limit of 0 or less means no limit.
func (s *Store) ListSyncs(ctx context.Context, f functions.SyncFilter) ([]*functions.Schedule, error) {
	if f.EnvironmentID == 0 {
		return nil, fnInvalid("list syncs: no environment")
	}
	if err := checkText(f); err != nil {
		return nil, err
	}
	query := `SELECT ` + syncColumns + ` FROM syncs WHERE environment_id = ?`
	args := []any{f.EnvironmentID}
	add := func(cond string, arg any) {
		query += " AND " + cond
		args = append(args, arg)
	}
	if f.Integration != "" {
		add("integration_key = ?", f.Integration)
	}
	if f.ConnectionID != 0 {
		add("connection_id = ?", f.ConnectionID)
	}
	if f.Name != "" {
		add("name = ?", f.Name)
	}
	if f.Variant != "" {
		add("variant = ?", f.Variant)
	}
	if f.AfterID != "" {
		after, err := fnUUID("after id", f.AfterID)
		if err != nil {
			return nil, err
		}
		add("id > ?", after)
	}
	query += ` ORDER BY id LIMIT ?`
	args = append(args, fnLimit(f.Limit))
	out := []*functions.Schedule{}
	if err := fnQueryEach(ctx, s.reader(ctx), "list syncs", scanSyncs(&out), query, args...); err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateSync replaces the mutable fields of the sync with sy.ID when its
// stored Version equals sy.Version, then sets sy.Version to the next one.
// A stale version is store.ErrConflict; a missing sync
// store.ErrNotFound.
func (s *Store) UpdateSync(ctx context.Context, sy *functions.Schedule) error {
	if err := checkText(sy); err != nil {
		return err
	}
	id, err := fnUUID("sync id", sy.ID)
	if err != nil {
		return err
	}
	run, err := fnOptionalUUID("run id", sy.RunID)
	if err != nil {
		return err
	}
	q := s.writer(ctx)
	var version int64
	err = q.QueryRowContext(ctx, `UPDATE syncs SET frequency = ?, interval_ms = ?, paused = ?, next_run_at = ?,
		last_sync_date = ?, run_id = ?, updated_at = ?, version = version + 1
	WHERE id = ? AND version = ?
	RETURNING version`, sy.Frequency, sy.Interval.Milliseconds(), sy.Paused, nullMicros(sy.NextRunAt),
		nullMicros(sy.LastSyncDate), run, micros(sy.UpdatedAt), id, sy.Version).Scan(&version)
	if errors.Is(err, sql.ErrNoRows) {
		var exists bool
		if err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM syncs WHERE id = ?)`, id).Scan(&exists); err != nil {
			return dbErr(ctx, "update sync", err)
		}
		if !exists {
			return fnNotFound("sync %s", id)
		}
		return fnConflict("sync %s: version %d is stale", id, sy.Version)
	}
	if err != nil {
		return dbErr(ctx, "update sync", err)
	}
	sy.Version = version
	return nil
}

// DeleteSync deletes a sync and its runs (which the runs' foreign key
// deletes), or returns store.ErrNotFound.
func (s *Store) DeleteSync(ctx context.Context, id string) error {
	id, err := fnUUID("sync id", id)
	if err != nil {
		return err
	}
	res, err := s.writer(ctx).ExecContext(ctx, `DELETE FROM syncs WHERE id = ?`, id)
	if err != nil {
		return dbErr(ctx, "delete sync", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return dbErr(ctx, "delete sync", err)
	}
	if n == 0 {
		return fnNotFound("sync %s", id)
	}
	return nil
}

// CountSyncVariants counts the syncs of a connection and sync name whose
// variant is not functions.BaseVariant.
func (s *Store) CountSyncVariants(ctx context.Context, connectionID int64, name string) (int, error) {
	if err := checkText(name); err != nil {
		return 0, err
	}
	var n int
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT count(*) FROM syncs
	WHERE connection_id = ? AND name = ? AND variant <> ?`, connectionID, name, functions.BaseVariant).Scan(&n)
	if err != nil {
		return 0, dbErr(ctx, "count sync variants", err)
	}
	return n, nil
}

// qClaimDueSyncs reads syncs_due_idx in order: its WHERE repeats the
// index's, so due syncs are one index range, whatever the number of
// paused, running or later syncs.
const qClaimDueSyncs = `SELECT ` + syncColumns + ` FROM syncs
WHERE paused = 0 AND run_id IS NULL AND next_run_at IS NOT NULL AND next_run_at <= ?
ORDER BY next_run_at, id
LIMIT ?`

// ClaimDueSyncs returns up to limit syncs (all when limit is 0 or less)
// that are not paused, have no RunID and are due at now, earliest due
// first. The transaction of ctx holds the one writer connection, which
// serialises every transaction of the Store, so no other claims them
// before it ends, and there is nothing more to lock (another process on
// the file waits for the write lock). Outside a transaction of s it
// returns an error.
func (s *Store) ClaimDueSyncs(ctx context.Context, now time.Time, limit int) ([]*functions.Schedule, error) {
	st, ok := s.liveTx(ctx)
	if !ok {
		return nil, errors.New("sqlite: ClaimDueSyncs must be called inside WithTx")
	}
	out := []*functions.Schedule{}
	err := fnQueryEach(ctx, st.tx, "claim due syncs", scanSyncs(&out), qClaimDueSyncs, micros(now), fnLimit(limit))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ---- Sync runs ----

const runColumns = `id, sync_id, status, type, "trigger", reset, empty_cache, log_id, created_at, started_at,
	finished_at, heartbeat_at, cancel_requested, supersedes, result, checkpoint_from, checkpoint_to,
	checkpoints_touched, error, version`

// scanRun reads a row of runColumns.
func scanRun(r fnScanner) (*functions.SyncRun, error) {
	run := &functions.SyncRun{}
	var created int64
	var started, finished, heartbeat sql.NullInt64
	var supersedes, result, from, to, runErr sql.NullString
	err := r.Scan(&run.ID, &run.SyncID, &run.Status, &run.Type, &run.Trigger, &run.Reset, &run.EmptyCache, &run.LogID,
		&created, &started, &finished, &heartbeat, &run.CancelRequested, &supersedes, &result, &from, &to,
		&run.CheckpointsTouched, &runErr, &run.Version)
	if err != nil {
		return nil, err
	}
	run.CreatedAt = fromMicros(created)
	run.StartedAt, run.FinishedAt, run.HeartbeatAt = timePtr(started), timePtr(finished), timePtr(heartbeat)
	run.Supersedes = supersedes.String
	run.CheckpointFrom, run.CheckpointTo, run.Error = fnRawJSON(from), fnRawJSON(to), fnRawJSON(runErr)
	if err := fromJSON(result, &run.Result); err != nil {
		return nil, err
	}
	return run, nil
}

// scanRuns returns a scan function of fnQueryEach that calls add with each
// run.
func scanRuns(add func(*functions.SyncRun)) func(fnScanner) error {
	return func(r fnScanner) error {
		run, err := scanRun(r)
		if err == nil {
			add(run)
		}
		return err
	}
}

// runArgs are the arguments of a run's mutable columns, in the order of
// the statements of CreateSyncRun and UpdateSyncRun.
func runArgs(r *functions.SyncRun) ([]any, error) {
	if err := checkText(r); err != nil {
		return nil, err
	}
	supersedes, err := fnOptionalUUID("supersedes", r.Supersedes)
	if err != nil {
		return nil, err
	}
	result, err := jsonText(r.Result)
	if err != nil {
		return nil, fnInvalid("result: %v", err)
	}
	from, err := fnRawJSONArg("checkpoint_from", r.CheckpointFrom)
	if err != nil {
		return nil, err
	}
	to, err := fnRawJSONArg("checkpoint_to", r.CheckpointTo)
	if err != nil {
		return nil, err
	}
	runErr, err := fnRawJSONArg("error", r.Error)
	if err != nil {
		return nil, err
	}
	return []any{r.Status, r.Type, r.Reset, r.EmptyCache, r.LogID, nullMicros(r.StartedAt), nullMicros(r.FinishedAt),
		nullMicros(r.HeartbeatAt), r.CancelRequested, supersedes, result, from, to, r.CheckpointsTouched, runErr}, nil
}

// CreateSyncRun stores a new run (ID set by the caller, a UUID) and sets
// its Version to 1. An ID already stored is store.ErrConflict; a missing
// sync store.ErrNotFound.
func (s *Store) CreateSyncRun(ctx context.Context, r *functions.SyncRun) error {
	id, err := fnUUID("run id", r.ID)
	if err != nil {
		return err
	}
	syncID, err := fnUUID("sync id", r.SyncID)
	if err != nil {
		return err
	}
	args, err := runArgs(r)
	if err != nil {
		return err
	}
	q := s.writer(ctx)
	var version int64
	err = q.QueryRowContext(ctx, `INSERT INTO sync_runs (status, type, reset, empty_cache, log_id, started_at, finished_at,
		heartbeat_at, cancel_requested, supersedes, result, checkpoint_from, checkpoint_to, checkpoints_touched,
		error, id, sync_id, "trigger", created_at, version)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
	ON CONFLICT (id) DO NOTHING
	RETURNING version`, append(args, id, syncID, r.Trigger, micros(r.CreatedAt))...).Scan(&version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := s.GetSyncByID(ctx, syncID); err != nil {
			return err
		}
		return fnConflict("sync run %s", id)
	case isForeignKey(err):
		return fnNotFound("sync %s", syncID)
	case err != nil:
		return dbErr(ctx, "create sync run", err)
	}
	r.ID, r.SyncID, r.Version = id, syncID, version
	return nil
}

// GetSyncRun returns a run, or store.ErrNotFound.
func (s *Store) GetSyncRun(ctx context.Context, id string) (*functions.SyncRun, error) {
	id, err := fnUUID("run id", id)
	if err != nil {
		return nil, err
	}
	run, err := scanRun(s.reader(ctx).QueryRowContext(ctx, `SELECT `+runColumns+` FROM sync_runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fnNotFound("sync run %s", id)
	}
	if err != nil {
		return nil, dbErr(ctx, "get sync run", err)
	}
	return run, nil
}

// UpdateSyncRun replaces the mutable fields of the run with r.ID when its
// stored Version equals r.Version, then sets r.Version to the next one. A
// stale version is store.ErrConflict; a missing run store.ErrNotFound.
func (s *Store) UpdateSyncRun(ctx context.Context, r *functions.SyncRun) error {
	id, err := fnUUID("run id", r.ID)
	if err != nil {
		return err
	}
	args, err := runArgs(r)
	if err != nil {
		return err
	}
	q := s.writer(ctx)
	var version int64
	err = q.QueryRowContext(ctx, `UPDATE sync_runs SET status = ?, type = ?, reset = ?, empty_cache = ?, log_id = ?,
		started_at = ?, finished_at = ?, heartbeat_at = ?, cancel_requested = ?, supersedes = ?, result = ?,
		checkpoint_from = ?, checkpoint_to = ?, checkpoints_touched = ?, error = ?, version = version + 1
	WHERE id = ? AND version = ?
	RETURNING version`, append(args, id, r.Version)...).Scan(&version)
	if errors.Is(err, sql.ErrNoRows) {
		var exists bool
		if err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sync_runs WHERE id = ?)`, id).Scan(&exists); err != nil {
			return dbErr(ctx, "update sync run", err)
		}
		if !exists {
			return fnNotFound("sync run %s", id)
		}
		return fnConflict("sync run %s: version %d is stale", id, r.Version)
	}
	if err != nil {
		return dbErr(ctx, "update sync run", err)
	}
	r.Version = version
	return nil
}

// LatestSyncRuns returns the latest run (by CreatedAt, then ID) of each of
// the syncs, by sync ID; a sync without runs is absent.
func (s *Store) LatestSyncRuns(ctx context.Context, syncIDs []string) (map[string]*functions.SyncRun, error) {
	return s.latestRuns(ctx, syncIDs, false)
}

// LatestFinishedSyncRuns is LatestSyncRuns among the runs that finished
// (SUCCESS or STOPPED).
func (s *Store) LatestFinishedSyncRuns(ctx context.Context, syncIDs []string) (map[string]*functions.SyncRun, error) {
	return s.latestRuns(ctx, syncIDs, true)
}

// latestRunsSQL returns the statement that selects the latest run (the
// latest finished one) of each sync of a JSON array, with one probe of
// sync_runs_latest_idx (sync_runs_latest_finished_idx) per sync.
func latestRunsSQL(finished bool) string {
	cond := ""
	if finished {
		cond = ` AND l.status IN ('SUCCESS', 'STOPPED')`
	}
	return `SELECT ` + runColumns + ` FROM sync_runs WHERE id IN (
	SELECT (SELECT l.id FROM sync_runs l WHERE l.sync_id = k.value` + cond + `
		ORDER BY l.created_at DESC, l.id DESC LIMIT 1)
	FROM json_each(?) AS k)`
}

// latestRuns returns the latest run (the latest finished one) of each
// sync, in one statement.
func (s *Store) latestRuns(ctx context.Context, syncIDs []string, finished bool) (map[string]*functions.SyncRun, error) {
	out := map[string]*functions.SyncRun{}
	if len(syncIDs) == 0 {
		return out, nil
	}
	// Answers are keyed by the IDs as given.
	given := make(map[string]string, len(syncIDs))
	ids := make([]string, 0, len(syncIDs))
	for _, raw := range syncIDs {
		id, err := fnUUID("sync id", raw)
		if err != nil {
			return nil, err
		}
		if _, dup := given[id]; !dup {
			ids = append(ids, id)
		}
		given[id] = raw
	}
	err := fnQueryEach(ctx, s.reader(ctx), "latest sync runs", scanRuns(func(r *functions.SyncRun) { out[given[r.SyncID]] = r }),
		latestRunsSQL(finished), recordIDsJSON(ids))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// qStaleSyncRuns reads sync_runs_stale_idx in order (its expression and
// WHERE as the index has them).
const qStaleSyncRuns = `SELECT ` + runColumns + ` FROM sync_runs
WHERE status IN ('QUEUED', 'RUNNING')
	AND (CASE WHEN status = 'RUNNING' THEN heartbeat_at ELSE created_at END) < ?
ORDER BY (CASE WHEN status = 'RUNNING' THEN heartbeat_at ELSE created_at END), id
LIMIT ?`

// StaleSyncRuns returns up to limit runs (all when limit is 0 or less)
// that are RUNNING with a HeartbeatAt before before, or QUEUED with a
// CreatedAt before before, the oldest first. A RUNNING run without a
// HeartbeatAt is not stale.
func (s *Store) StaleSyncRuns(ctx context.Context, before time.Time, limit int) ([]*functions.SyncRun, error) {
	out := []*functions.SyncRun{}
	err := fnQueryEach(ctx, s.reader(ctx), "stale sync runs", scanRuns(func(r *functions.SyncRun) { out = append(out, r) }),
		qStaleSyncRuns, micros(before), fnLimit(limit))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// qDeleteSyncRunsBefore reads sync_runs_finished_at_idx in order and keeps
// the latest finished run of each sync: a candidate must have a later
// finished run (one probe of sync_runs_latest_finished_idx).
const qDeleteSyncRunsBefore = `DELETE FROM sync_runs WHERE rowid IN (
	SELECT r.rowid FROM sync_runs r
	WHERE r.status IN ('SUCCESS', 'STOPPED') AND r.finished_at < ?
		AND EXISTS (SELECT 1 FROM sync_runs l
			WHERE l.sync_id = r.sync_id AND l.status IN ('SUCCESS', 'STOPPED')
				AND (l.created_at, l.id) > (r.created_at, r.id))
	ORDER BY r.finished_at, r.id
	LIMIT ?)`

// DeleteSyncRunsBefore deletes up to limit (all when limit is 0 or less)
// finished runs that finished before before and are not the latest
// finished run of their sync, those that finished first first, and returns
// how many.
func (s *Store) DeleteSyncRunsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := s.writer(ctx).ExecContext(ctx, qDeleteSyncRunsBefore, micros(before), fnLimit(limit))
	if err != nil {
		return 0, dbErr(ctx, "delete sync runs", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, dbErr(ctx, "delete sync runs", err)
	}
	return int(n), nil
}

// ---- Checkpoints ----

// GetCheckpoint returns a checkpoint, or store.ErrNotFound.
func (s *Store) GetCheckpoint(ctx context.Context, connectionID int64, key string) (*functions.StoredCheckpoint, error) {
	if err := checkText(key); err != nil {
		return nil, err
	}
	var value string
	var version, updated int64
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT value, version, updated_at FROM checkpoints
	WHERE connection_id = ? AND "key" = ?`, connectionID, key).Scan(&value, &version, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fnNotFound("checkpoint %q of connection %d", key, connectionID)
	}
	if err != nil {
		return nil, dbErr(ctx, "get checkpoint", err)
	}
	return &functions.StoredCheckpoint{Value: json.RawMessage(value), Version: version, UpdatedAt: fromMicros(updated)}, nil
}

// PutCheckpoint writes a checkpoint when its stored version is expected
// (0: none is stored) and returns the new version; otherwise it returns
// store.ErrConflict and writes nothing. A new checkpoint of a missing
// connection is store.ErrNotFound; an empty value store.ErrInvalid.
func (s *Store) PutCheckpoint(ctx context.Context, connectionID int64, key string, value json.RawMessage, expected int64, now time.Time) (int64, error) {
	if err := checkText(key); err != nil {
		return 0, err
	}
	if len(value) == 0 {
		return 0, fnInvalid("checkpoint %q: no value", key)
	}
	v, err := fnRawJSONArg("checkpoint "+strconv.Quote(key), value)
	if err != nil {
		return 0, err
	}
	var version int64
	q := s.writer(ctx)
	if expected == 0 {
		err := q.QueryRowContext(ctx, `INSERT INTO checkpoints (connection_id, "key", value, version, updated_at)
		VALUES (?, ?, ?, 1, ?)
		ON CONFLICT DO NOTHING
		RETURNING version`, connectionID, key, v, micros(now)).Scan(&version)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return 0, fnConflict("checkpoint %q: already stored", key)
		case isForeignKey(err):
			return 0, fnNotFound("connection %d", connectionID)
		case err != nil:
			return 0, dbErr(ctx, "put checkpoint", err)
		}
		return version, nil
	}
	err = q.QueryRowContext(ctx, `UPDATE checkpoints SET value = ?, updated_at = ?, version = version + 1
	WHERE connection_id = ? AND "key" = ? AND version = ?
	RETURNING version`, v, micros(now), connectionID, key, expected).Scan(&version)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fnConflict("checkpoint %q: version %d is not the stored one", key, expected)
	}
	if err != nil {
		return 0, dbErr(ctx, "put checkpoint", err)
	}
	return version, nil
}

// DeleteCheckpoint deletes a checkpoint when its stored version is
// expected (0: any); a stale version is store.ErrConflict, a missing
// checkpoint is no error.
func (s *Store) DeleteCheckpoint(ctx context.Context, connectionID int64, key string, expected int64) error {
	if err := checkText(key); err != nil {
		return err
	}
	q := s.writer(ctx)
	res, err := q.ExecContext(ctx, `DELETE FROM checkpoints
	WHERE connection_id = ? AND "key" = ? AND (?3 = 0 OR version = ?3)`, connectionID, key, expected)
	if err != nil {
		return dbErr(ctx, "delete checkpoint", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return dbErr(ctx, "delete checkpoint", err)
	}
	if n > 0 || expected == 0 {
		return nil
	}
	var exists bool
	err = q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM checkpoints WHERE connection_id = ? AND "key" = ?)`,
		connectionID, key).Scan(&exists)
	if err != nil {
		return dbErr(ctx, "delete checkpoint", err)
	}
	if exists {
		return fnConflict("checkpoint %q: version %d is stale", key, expected)
	}
	return nil
}

// DeleteCheckpoints deletes every checkpoint of the connection whose key
// starts with prefix (taken literally), and returns how many.
func (s *Store) DeleteCheckpoints(ctx context.Context, connectionID int64, prefix string) (int, error) {
	if err := checkText(prefix); err != nil {
		return 0, err
	}
	res, err := s.writer(ctx).ExecContext(ctx, `DELETE FROM checkpoints
	WHERE connection_id = ? AND substr("key", 1, length(?2)) = ?2`, connectionID, prefix)
	if err != nil {
		return 0, dbErr(ctx, "delete checkpoints", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, dbErr(ctx, "delete checkpoints", err)
	}
	return int(n), nil
}

// ---- Action tasks ----

const taskColumns = `id, environment_id, connection_id, integration_key, connection_ref, action_name,
	sealed_input, status, attempts, max_retries, sealed_output, sealed_error, error_status, log_id,
	created_at, updated_at, finished_at, version`

// scanTask reads a row of taskColumns.
func scanTask(r fnScanner) (*functions.ActionTask, error) {
	t := &functions.ActionTask{}
	var created, updated int64
	var finished sql.NullInt64
	err := r.Scan(&t.ID, &t.EnvironmentID, &t.ConnectionID, &t.Integration, &t.ConnectionRef, &t.ActionName,
		&t.SealedInput, &t.Status, &t.Attempts, &t.MaxRetries, &t.SealedOutput, &t.SealedError, &t.ErrorStatus,
		&t.LogID, &created, &updated, &finished, &t.Version)
	if err != nil {
		return nil, err
	}
	t.CreatedAt, t.UpdatedAt, t.FinishedAt = fromMicros(created), fromMicros(updated), timePtr(finished)
	return t, nil
}

// CreateActionTask stores a new task (ID set by the caller, a UUID) and
// sets its Version to 1. An ID already stored is store.ErrConflict; a
// missing environment store.ErrNotFound.
func (s *Store) CreateActionTask(ctx context.Context, t *functions.ActionTask) error {
	id, err := fnUUID("action task id", t.ID)
	if err != nil {
		return err
	}
	if err := checkText(t); err != nil {
		return err
	}
	q := s.writer(ctx)
	var version int64
	err = q.QueryRowContext(ctx, `INSERT INTO action_tasks (`+taskColumns+`)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
	ON CONFLICT (id) DO NOTHING
	RETURNING version`, id, t.EnvironmentID, t.ConnectionID, t.Integration, t.ConnectionRef, t.ActionName,
		t.SealedInput, t.Status, t.Attempts, t.MaxRetries, t.SealedOutput, t.SealedError, t.ErrorStatus, t.LogID,
		micros(t.CreatedAt), micros(t.UpdatedAt), nullMicros(t.FinishedAt)).Scan(&version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		var exists bool
		err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM environments WHERE id = ?)`, t.EnvironmentID).Scan(&exists)
		if err != nil {
			return dbErr(ctx, "create action task", err)
		}
		if !exists {
			return fnNotFound("environment %d", t.EnvironmentID)
		}
		return fnConflict("action task %s", id)
	case isForeignKey(err):
		return fnNotFound("environment %d", t.EnvironmentID)
	case err != nil:
		return dbErr(ctx, "create action task", err)
	}
	t.ID, t.Version = id, version
	return nil
}

// GetActionTask returns a task of the environment, or store.ErrNotFound.
func (s *Store) GetActionTask(ctx context.Context, environmentID int64, id string) (*functions.ActionTask, error) {
	id, err := fnUUID("action task id", id)
	if err != nil {
		return nil, err
	}
	t, err := scanTask(s.reader(ctx).QueryRowContext(ctx, `SELECT `+taskColumns+` FROM action_tasks
	WHERE id = ? AND environment_id = ?`, id, environmentID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fnNotFound("action task %s", id)
	}
	if err != nil {
		return nil, dbErr(ctx, "get action task", err)
	}
	return t, nil
}

// UpdateActionTask replaces the mutable fields of the task of
// t.EnvironmentID with t.ID when its stored Version equals t.Version, then
// sets t.Version to the next one. A stale version is store.ErrConflict; a
// missing task (or one of another environment) store.ErrNotFound.
func (s *Store) UpdateActionTask(ctx context.Context, t *functions.ActionTask) error {
	id, err := fnUUID("action task id", t.ID)
	if err != nil {
		return err
	}
	if err := checkText(t); err != nil {
		return err
	}
	q := s.writer(ctx)
	var version int64
	err = q.QueryRowContext(ctx, `UPDATE action_tasks SET status = ?, attempts = ?, sealed_output = ?, sealed_error = ?,
		error_status = ?, log_id = ?, updated_at = ?, finished_at = ?, version = version + 1
	WHERE id = ? AND environment_id = ? AND version = ?
	RETURNING version`, t.Status, t.Attempts, t.SealedOutput, t.SealedError, t.ErrorStatus, t.LogID,
		micros(t.UpdatedAt), nullMicros(t.FinishedAt), id, t.EnvironmentID, t.Version).Scan(&version)
	if errors.Is(err, sql.ErrNoRows) {
		var exists bool
		err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM action_tasks WHERE id = ? AND environment_id = ?)`,
			id, t.EnvironmentID).Scan(&exists)
		if err != nil {
			return dbErr(ctx, "update action task", err)
		}
		if !exists {
			return fnNotFound("action task %s", id)
		}
		return fnConflict("action task %s: version %d is stale", id, t.Version)
	}
	if err != nil {
		return dbErr(ctx, "update action task", err)
	}
	t.Version = version
	return nil
}

// qStaleActionTasks reads action_tasks_running_idx in order.
const qStaleActionTasks = `SELECT ` + taskColumns + ` FROM action_tasks
WHERE status = 'RUNNING' AND updated_at < ?
ORDER BY updated_at, id
LIMIT ?`

// StaleActionTasks returns up to limit tasks (all when limit is 0 or
// less) that are RUNNING with an UpdatedAt before before, the oldest
// first.
func (s *Store) StaleActionTasks(ctx context.Context, before time.Time, limit int) ([]*functions.ActionTask, error) {
	out := []*functions.ActionTask{}
	err := fnQueryEach(ctx, s.reader(ctx), "stale action tasks", func(r fnScanner) error {
		t, err := scanTask(r)
		if err == nil {
			out = append(out, t)
		}
		return err
	}, qStaleActionTasks, micros(before), fnLimit(limit))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// qDeleteActionTasksBefore reads action_tasks_finished_at_idx in order.
const qDeleteActionTasksBefore = `DELETE FROM action_tasks WHERE rowid IN (
	SELECT rowid FROM action_tasks WHERE finished_at IS NOT NULL AND finished_at < ?
	ORDER BY finished_at, id
	LIMIT ?)`

// DeleteActionTasksBefore deletes up to limit tasks (all when limit is 0
// or less) that finished before before, those that finished first first,
// and returns how many.
func (s *Store) DeleteActionTasksBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := s.writer(ctx).ExecContext(ctx, qDeleteActionTasksBefore, micros(before), fnLimit(limit))
	if err != nil {
		return 0, dbErr(ctx, "delete action tasks", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, dbErr(ctx, "delete action tasks", err)
	}
	return int(n), nil
}
