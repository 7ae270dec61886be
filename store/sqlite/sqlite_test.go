package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/embedauth/connect/store/sqlite"
	"github.com/embedauth/connect/store/storetest"
)

// openFile opens a Store on a new database file of the test.
func openFile(t *testing.T) *sqlite.Store {
	t.Helper()
	return openPath(t, filepath.Join(t.TempDir(), "connect.db"))
}

// openPath opens a Store on the database file at path, closed when the
// test ends.
func openPath(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// openMemory opens a Store on a private in-memory database.
func openMemory(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), sqlite.MemoryPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) storetest.Store { return openFile(t) })
	})
	t.Run("memory", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) storetest.Store { return openMemory(t) })
	})
}
