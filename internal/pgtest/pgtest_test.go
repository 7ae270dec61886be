package pgtest_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/lib/pq"

	"github.com/embedauth/connect/internal/pgtest"
)

func TestSchema(t *testing.T) {
	var name string
	t.Run("create", func(t *testing.T) {
		db, schema := pgtest.Schema(t)
		name = schema
		if !strings.HasPrefix(schema, "pgtest_") {
			t.Errorf("schema %q lacks the pgtest_ prefix", schema)
		}
		var exists bool
		if err := db.QueryRowContext(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if !exists {
			t.Fatalf("schema %s was not created", schema)
		}
		if _, other := pgtest.Schema(t); other == schema {
			t.Errorf("two calls returned schema %s", schema)
		}
	})
	// The subtest's cleanup dropped the schema.
	db := pgtest.DB(t)
	var exists bool
	if err := db.QueryRowContext(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("schema %s still exists after its test ended", name)
	}
}

func TestDBIsShared(t *testing.T) {
	if pgtest.DB(t) != pgtest.DB(t) {
		t.Error("DB returned two pools for one URL")
	}
}

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m))
}

// migrateTwoTables creates parent and child (a foreign key to parent, an
// identity column) and a trigger that writes to log when a child row is
// deleted, as the Store's change feed does.
func migrateTwoTables(ctx context.Context, db *sql.DB, schema string) error {
	s := pq.QuoteIdentifier(schema) + "."
	_, err := db.ExecContext(ctx, `
		CREATE TABLE `+s+`schema_migrations (version integer PRIMARY KEY);
		INSERT INTO `+s+`schema_migrations VALUES (1);
		CREATE TABLE `+s+`log (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, what text);
		CREATE TABLE `+s+`parent (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY);
		CREATE TABLE `+s+`child (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, parent bigint NOT NULL REFERENCES `+s+`parent (id));
		CREATE FUNCTION `+s+`note() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO `+s+`log (what) VALUES ('deleted ' || OLD.id); RETURN OLD; END $$;
		CREATE TRIGGER note AFTER DELETE ON `+s+`child FOR EACH ROW EXECUTE FUNCTION `+s+`note();`)
	return err
}

// TestMigrated: a migrated schema is emptied when its test ends (rows
// deleted whatever the foreign keys and triggers, sequences restarted,
// the migrations' bookkeeping kept) and given to the next test of its
// kind; one that a late writer filled again is dropped instead; kinds do
// not share schemas.
func TestMigrated(t *testing.T) {
	migrations := 0
	migrate := func(ctx context.Context, db *sql.DB, schema string) error {
		migrations++
		return migrateTwoTables(ctx, db, schema)
	}
	db := pgtest.DB(t) // skips without Postgres
	var first string
	t.Run("first", func(t *testing.T) {
		_, first = pgtest.Migrated(t, "two", migrate)
		s := pq.QuoteIdentifier(first) + "."
		for range 3 {
			if _, err := db.ExecContext(t.Context(), `WITH p AS (INSERT INTO `+s+`parent DEFAULT VALUES RETURNING id)
				INSERT INTO `+s+`child (parent) SELECT id FROM p`); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("second", func(t *testing.T) {
		_, schema := pgtest.Migrated(t, "two", migrate)
		if schema != first || migrations != 1 {
			t.Fatalf("got schema %s after %s, %d migrations; want the same schema, migrated once", schema, first, migrations)
		}
		s := pq.QuoteIdentifier(schema) + "."
		for _, table := range []string{"parent", "child", "log"} {
			var n int
			if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM `+s+table).Scan(&n); err != nil || n != 0 {
				t.Errorf("%s holds %d rows (%v), want none", table, n, err)
			}
		}
		var version, id int
		if err := db.QueryRowContext(t.Context(), `SELECT version FROM `+s+`schema_migrations`).Scan(&version); err != nil || version != 1 {
			t.Errorf("schema_migrations: %d, %v; want its row kept", version, err)
		}
		if err := db.QueryRowContext(t.Context(), `INSERT INTO `+s+`parent DEFAULT VALUES RETURNING id`).Scan(&id); err != nil || id != 1 {
			t.Errorf("the first new parent has id %d (%v), want 1", id, err)
		}
	})
	var other string
	t.Run("other kind", func(t *testing.T) {
		_, other = pgtest.Migrated(t, "other", migrate)
		if other == first || migrations != 2 {
			t.Errorf("kind other got schema %s (the first kind's is %s) after %d migrations", other, first, migrations)
		}
	})
	// A writer that outlives its test fills the idle schema again: the
	// next test gets a fresh one and the filled one is dropped.
	if _, err := db.ExecContext(t.Context(), `INSERT INTO `+pq.QuoteIdentifier(first)+`.parent DEFAULT VALUES`); err != nil {
		t.Fatal(err)
	}
	t.Run("late writer", func(t *testing.T) {
		_, schema := pgtest.Migrated(t, "two", migrate)
		if schema == first || migrations != 3 {
			t.Errorf("got schema %s after %d migrations, want a fresh one", schema, migrations)
		}
	})
	if schemaExists(t, db, first) {
		t.Errorf("the filled schema %s was not dropped", first)
	}
}

// TestMainDropsThePool runs TestMigrated in a child process, then checks
// that its Main dropped the schemas it left in the pool.
func TestMainDropsThePool(t *testing.T) {
	db := pgtest.DB(t)
	// The child runs TestMigrated alone, not this test.
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestMigrated$", "-test.v")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	// The child's pooled schemas are named after its process id.
	pattern := fmt.Sprintf("pgtest\\_pool\\_%d\\_%%", cmd.Process.Pid)
	var n int
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM pg_namespace WHERE nspname LIKE $1`, pattern).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 || !strings.Contains(string(out), "--- PASS: TestMigrated") {
		t.Errorf("%d pooled schemas of the child are left\n%s", n, out)
	}
}

func schemaExists(t *testing.T, db *sql.DB, name string) bool {
	t.Helper()
	var exists bool
	if err := db.QueryRowContext(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	return exists
}
