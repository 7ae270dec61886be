package migrations_test

import (
	"testing"
	"testing/fstest"

	"github.com/embedauth/connect/internal/migrations"
)

func TestLoad(t *testing.T) {
	ms, err := migrations.Load(fstest.MapFS{
		"m/010_b.up.sql": {Data: []byte("B")},
		"m/002_a.up.sql": {Data: []byte("A")},
		"m/readme.txt":   {Data: []byte("x")},
	}, "m/*.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0] != (migrations.Migration{Version: 2, Name: "a", SQL: "A"}) || ms[1].Version != 10 || ms[1].Name != "b" {
		t.Errorf("Load = %+v", ms)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"no number":    {"m/x_a.up.sql": {}},
		"no name":      {"m/001.up.sql": {}},
		"zero":         {"m/000_a.up.sql": {}},
		"same version": {"m/001_a.up.sql": {}, "m/01_b.up.sql": {}},
	} {
		if _, err := migrations.Load(fsys, "m/*.up.sql"); err == nil {
			t.Errorf("%s: Load succeeded, want an error", name)
		}
	}
}
