package connect_test

import (
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/lib/pq"
)

// The raw rows of a backend's database, read past the Store, the same way
// on both: placeholders are $1, $2, ... (modernc.org/sqlite binds $N to the
// Nth argument too).

// sqlDB returns the backend's database: the SQLite file's writer
// connection, or the Postgres pool.
func (b *backend) sqlDB(t testing.TB) *sql.DB {
	t.Helper()
	switch {
	case b.lite != nil:
		return b.lite.DB()
	case b.db != nil:
		return b.db
	}
	t.Fatal("a backend with neither SQLite nor Postgres")
	return nil
}

// table returns the quoted name of a table, in the backend's schema on
// Postgres.
func (b *backend) table(name string) string {
	if b.lite != nil {
		return pq.QuoteIdentifier(name)
	}
	return pq.QuoteIdentifier(b.schema) + "." + pq.QuoteIdentifier(name)
}

// tables lists the base tables of the backend's database, the Store's and
// River's, sorted; not SQLite's own (sqlite_sequence, sqlite_stat1).
func (b *backend) tables(t testing.TB) []string {
	t.Helper()
	q, args := `SELECT table_name FROM information_schema.tables
		WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY table_name`, []any{b.schema}
	if b.lite != nil {
		q, args = `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`, nil
	}
	rows, err := b.sqlDB(t).QueryContext(t.Context(), q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("only tables %v", out)
	}
	return out
}

// count returns the number of rows of a table, those matching where (with
// args) when it is not empty.
func (b *backend) count(t testing.TB, table, where string, args ...any) int {
	t.Helper()
	q := `SELECT count(*) FROM ` + b.table(table)
	if where != "" {
		q += ` WHERE ` + where
	}
	var n int
	if err := b.sqlDB(t).QueryRowContext(t.Context(), q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// rowTexts returns every row of a table as one line of text: its columns'
// values, each byte string both as text (what is not printable UTF-8 shown
// as '.') and in hex (as Postgres prints a bytea), so that a search of the
// text finds a value stored as text or as bytes.
func (b *backend) rowTexts(t testing.TB, table string) []string {
	t.Helper()
	rows, err := b.sqlDB(t).QueryContext(t.Context(), `SELECT * FROM `+b.table(table))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var line strings.Builder
		for i, v := range vals {
			if i > 0 {
				line.WriteString(" | ")
			}
			if bs, ok := v.([]byte); ok {
				text := strings.Map(func(r rune) rune {
					if r == utf8.RuneError || !unicode.IsPrint(r) {
						return '.'
					}
					return r
				}, string(bs))
				fmt.Fprintf(&line, "%s=%s \\x%s", cols[i], text, hex.EncodeToString(bs))
				continue
			}
			fmt.Fprintf(&line, "%s=%v", cols[i], v)
		}
		out = append(out, line.String())
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// rowBytes returns the bytes the rows of a table take (Postgres: the
// sum of pg_column_size of each row, bodies compressed and TOASTed as
// stored; SQLite: the payload of the table's b-tree, its records with
// their headers, overflow pages included) and the size of the table with
// its indexes on disk (Postgres: pg_total_relation_size, TOAST included;
// SQLite: the pages of the table's and its indexes' b-trees). Both count
// dead rows and free space until they are reused.
func (b *backend) rowBytes(t testing.TB, table string) (rowBytes, disk int64) {
	t.Helper()
	q := `SELECT (SELECT coalesce(sum(pg_column_size(r.*)), 0) FROM ` + b.table(table) + ` r), pg_total_relation_size($1::regclass)`
	arg := b.table(table)
	if b.lite != nil {
		q = `SELECT (SELECT coalesce(sum(payload), 0) FROM dbstat WHERE name = $1),
			(SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name IN (SELECT name FROM sqlite_master WHERE tbl_name = $1))`
		arg = table
	}
	if err := b.sqlDB(t).QueryRowContext(t.Context(), q, arg).Scan(&rowBytes, &disk); err != nil {
		t.Fatal(err)
	}
	return rowBytes, disk
}
