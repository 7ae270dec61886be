// Package migrations reads the embedded schema migrations of a SQL store:
// files named NNN_name.up.sql, applied in version order. store/postgres and
// store/sqlite each apply them their own way.
package migrations

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Migration is one migration file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load returns the migrations of the files matching pattern in fsys (such
// as "migrations/*.up.sql"), in version order. A file whose name is not
// NNN_name.up.sql, or two files of one version, is an error.
func Load(fsys fs.FS, pattern string) ([]Migration, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".up.sql")
		num, label, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("bad migration file name %q", n)
		}
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: label, SQL: string(b)})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("two migrations have version %d", ms[i].Version)
		}
	}
	return ms, nil
}
