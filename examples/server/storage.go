package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Names of the files the server keeps in its data directory.
const (
	databaseFileName = "connect.db"
	keyFileName      = "encryption.key"
)

// database is where the server keeps its data: a Postgres URL or a SQLite
// file.
type database struct {
	postgres string // a postgres:// URL, or
	sqlite   string // the path of a SQLite file
}

var schemeRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`)

// parseDatabaseURL reads DATABASE_URL:
//
//   - postgres://... or postgresql://...: Postgres;
//   - sqlite:PATH, sqlite:///ABSOLUTE/PATH (sqlite3: too), file:PATH or
//     file:///ABSOLUTE/PATH: the SQLite file at PATH, relative to the working
//     directory unless absolute (percent-escapes decoded; no host, no query);
//   - anything without a scheme: a path to a SQLite file, ~/ standing for
//     HOME.
//
// Unset, it is the file connect.db of the data directory (dataDir), which
// the caller makes.
func parseDatabaseURL(getenv func(string) string) (database, error) {
	v := getenv("DATABASE_URL")
	if v == "" {
		return database{}, nil
	}
	if v == ":memory:" {
		return database{}, errors.New(`DATABASE_URL ":memory:": the server keeps its data in a file; unset DATABASE_URL for a SQLite file in CONNECT_DATA_DIR`)
	}
	m := schemeRE.FindStringSubmatch(v)
	if m == nil {
		return database{sqlite: expandHome(getenv, v)}, nil
	}
	switch strings.ToLower(m[1]) {
	case "postgres", "postgresql":
		return database{postgres: v}, nil
	case "sqlite", "sqlite3", "file":
	default:
		return database{}, fmt.Errorf("DATABASE_URL: unknown scheme %q: want postgres://..., sqlite:PATH, file:PATH or a file path", m[1])
	}
	u, err := url.Parse(v)
	if err != nil {
		return database{}, fmt.Errorf("DATABASE_URL: %w", err)
	}
	form := "DATABASE_URL " + m[1] + ": "
	if u.Host != "" || u.User != nil {
		return database{}, errors.New(form + "a SQLite file is on this machine: write " + m[1] + ":relative/path.db or " + m[1] + ":///absolute/path.db, without a host")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return database{}, errors.New(form + "takes no query or fragment: the server sets SQLite's options itself")
	}
	path := u.Path
	if u.Opaque != "" {
		if path, err = url.PathUnescape(u.Opaque); err != nil {
			return database{}, fmt.Errorf("%s%w", form, err)
		}
	}
	if path == "" {
		return database{}, errors.New(form + "the file path is empty")
	}
	return database{sqlite: expandHome(getenv, path)}, nil
}

func expandHome(getenv func(string) string, path string) string {
	if home := getenv("HOME"); home != "" && strings.HasPrefix(path, "~/") {
		return filepath.Join(home, path[2:])
	}
	return path
}

// dataDir returns the data directory, CONNECT_DATA_DIR or ~/.connect,
// created (mode 0700) when it is missing, and refuses one the server
// cannot write to.
func dataDir(getenv func(string) string) (string, error) {
	dir, name := getenv("CONNECT_DATA_DIR"), "CONNECT_DATA_DIR"
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return "", errors.New("neither CONNECT_DATA_DIR nor HOME is set: set CONNECT_DATA_DIR to the directory of the server's data and key (or DATABASE_URL and a key)")
		}
		dir, name = filepath.Join(home, ".connect"), "the data directory (CONNECT_DATA_DIR, default ~/.connect)"
	}
	dir = expandHome(getenv, dir)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("%s %s cannot be created: %w; set CONNECT_DATA_DIR to a directory this user can write", name, dir, err)
	}
	if err := checkWritable(dir); err != nil {
		return "", fmt.Errorf("%s %s is not writable by this user: %w; set CONNECT_DATA_DIR to a directory it can write, or fix the directory's owner or mode", name, dir, err)
	}
	return dir, nil
}

// checkWritable creates and removes a file in dir.
func checkWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".write-check-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// dataDirKey returns the encryption key of the file encryption.key of dir,
// made the first time: base64 of 32 random bytes, as openssl rand -base64
// 32 makes, mode 0600. The file appears whole or not at all (written under
// another name, then linked to its own), so a crash while making it leaves
// no empty key, and two servers starting at once end up with the same
// key. A key file that others than its owner may read is refused, and so
// is making a key for a database file that exists already: its secrets
// were sealed with a key that is missing.
func dataDirKey(dir, database string) (key, path string, err error) {
	path = filepath.Join(dir, keyFileName)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if fi, err := os.Stat(database); err == nil && fi.Size() > 0 {
			return "", "", fmt.Errorf("the database %s exists but its encryption key %s is missing: restore the key backed up with it "+
				"(or give it with CONNECT_ENCRYPTION_KEY_FILE); a new key cannot open the secrets sealed with the old one", database, path)
		}
		if err := makeKeyFile(dir, path); err != nil {
			return "", "", fmt.Errorf("make the encryption key %s: %w", path, err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", "", fmt.Errorf("encryption key %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", "", fmt.Errorf("encryption key %s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", "", fmt.Errorf("encryption key %s has mode %04o: others than its owner may read the key to every stored secret; "+
			"make it private (chmod 600 %s) and start again", path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("encryption key %s: %w", path, err)
	}
	return string(b), path, nil
}

func makeKeyFile(dir, path string) error {
	raw := make([]byte, 32)
	rand.Read(raw)
	tmp, err := os.CreateTemp(dir, ".encryption.key-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(base64.StdEncoding.EncodeToString(raw) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // another server made it first: its key is the one
		}
		return err
	}
	// The new name is durable before any secret is sealed with the key.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// warnIfShared warns when the key file CONNECT_ENCRYPTION_KEY_FILE names may
// be read by others than its owner. (Mounted secrets are often 0644 in
// containers of one user, so this is no refusal.)
func warnIfShared(logger *slog.Logger, path string) {
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		logger.Warn("the encryption key file may be read by others than its owner: make it private (chmod 600)",
			"file", path, "mode", fmt.Sprintf("%04o", fi.Mode().Perm()))
	}
}

// redactedURL is a Postgres URL without its password, for logs.
func redactedURL(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable)"
	}
	u.RawQuery = ""
	return u.Redacted()
}
