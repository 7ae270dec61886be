package pgtest_test

import (
	"strings"
	"testing"

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
