package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/embedauth/connect"
)

// instance is one reference server the bench measures: a store and a
// GOMAXPROCS value, its data, its address and its running process.
type instance struct {
	Store      string
	GoMaxProcs int    // 0: unset, the Go runtime's default
	Label      string // "sqlite", "postgres", or with -gomaxprocs "sqlite-p1" ...

	// copyOf is the instance whose seeded data this one starts on (a
	// copy, made while both are stopped); nil for the one that is seeded.
	copyOf *instance

	dbName, dbURL string // Postgres: its database
	dataDir       string // SQLite: its CONNECT_DATA_DIR
	key           connect.EncryptionKey

	port, addr, url string // the server's
	server          *proc
	logs            []string // the log files of its processes
}

// dbPath is the SQLite file of a server on SQLite: connect.db in its data
// directory, where the server keeps its data without DATABASE_URL.
func (inst *instance) dbPath() string {
	if inst.dataDir == "" {
		return ""
	}
	return filepath.Join(inst.dataDir, "connect.db")
}

// newInstances returns the servers of a run: one per store, or one per
// store and GOMAXPROCS value, in the order of the stores; the first of
// each store is seeded, the others start on copies of its data.
func newInstances(stores []string, procs []int) []*instance {
	var out []*instance
	for _, s := range stores {
		if len(procs) == 0 {
			out = append(out, &instance{Store: s, Label: s})
			continue
		}
		var first *instance
		for _, p := range procs {
			inst := &instance{Store: s, GoMaxProcs: p, Label: s + "-p" + strconv.Itoa(p), copyOf: first}
			if first == nil {
				first = inst
			}
			out = append(out, inst)
		}
	}
	return out
}

// primary returns the instance of store that is seeded.
func (b *bench) primary(store string) *instance {
	for _, inst := range b.instances {
		if inst.Store == store && inst.copyOf == nil {
			return inst
		}
	}
	panic("no instance of store " + store)
}

// freshStorage gives inst an empty database (Postgres) or an empty data
// directory (SQLite), named after tag; close drops or removes it.
func (b *bench) freshStorage(ctx context.Context, inst *instance, tag string) error {
	switch inst.Store {
	case storePostgres:
		name, url, err := createDatabase(ctx, b.admin, b.cfg.AdminURL, b.salt+"_"+tag, "")
		if err != nil {
			return err
		}
		b.databases = append(b.databases, name)
		inst.dbName, inst.dbURL = name, url
		inst.key = connect.EncryptionKey{ID: connect.EncryptionKeyID(b.pgKey), Key: b.pgKey}
	case storeSQLite:
		dir, err := os.MkdirTemp(b.cfg.DataDir, "serverload-"+tag+"-")
		if err != nil {
			return fmt.Errorf("a SQLite data directory in -data-dir: %w", err)
		}
		b.dataDirs = append(b.dataDirs, dir)
		inst.dataDir = dir
	}
	return nil
}

// copyStorage gives inst a copy of the data of inst.copyOf, whose server
// is stopped: a database made from its database as a template, or a data
// directory holding copies of its database file and key.
func (b *bench) copyStorage(ctx context.Context, inst *instance) error {
	from := inst.copyOf
	inst.key = from.key
	switch inst.Store {
	case storePostgres:
		name, url, err := createDatabase(ctx, b.admin, b.cfg.AdminURL, b.salt+"_"+inst.Label[len(inst.Store)+1:], from.dbName)
		if err != nil {
			return err
		}
		b.databases = append(b.databases, name)
		inst.dbName, inst.dbURL = name, url
	case storeSQLite:
		dir, err := os.MkdirTemp(b.cfg.DataDir, "serverload-"+inst.Label+"-")
		if err != nil {
			return err
		}
		b.dataDirs = append(b.dataDirs, dir)
		inst.dataDir = dir
		// The server checkpoints its write-ahead log into the file when
		// it stops; a -wal left behind is copied with it.
		for _, name := range []string{"connect.db", "connect.db-wal", "encryption.key"} {
			if err := copyFile(filepath.Join(from.dataDir, name), filepath.Join(dir, name)); err != nil && !(os.IsNotExist(err) && name == "connect.db-wal") {
				return err
			}
		}
	}
	return nil
}

// copyFile copies a file with mode 0600 (the data directory's files are
// private).
func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return err
}

// readKeyFile reads an encryption key file such as the one the server
// makes in its data directory.
func readKeyFile(path string) (connect.EncryptionKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return connect.EncryptionKey{}, fmt.Errorf("the server's key: %w", err)
	}
	k, err := connect.ParseEncryptionKey(string(b))
	if err != nil {
		return connect.EncryptionKey{}, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// serverCmd is the command that starts inst's server: on Postgres with
// DATABASE_URL and the key given, as today's deployments run it; on SQLite
// with neither, only CONNECT_DATA_DIR, as the server runs by default.
func (b *bench) serverCmd(inst *instance) *exec.Cmd {
	cmd := exec.Command(b.bin)
	cmd.Env = append(environWithout("PORT", "DATABASE_URL", "CONNECT_", "GOMAXPROCS"),
		"PORT="+inst.port,
		"CONNECT_API_KEY="+b.apiKey,
		"CONNECT_PUBLIC_URL="+inst.url,
		"CONNECT_PROVIDERS_FILE="+b.providersFile,
		"CONNECT_PROVIDER_ALLOW_PRIVATE_NETWORKS=true", // the upstream is on 127.0.0.1
		"CONNECT_RATE_LIMIT="+strconv.Itoa(b.cfg.RateLimit),
	)
	switch inst.Store {
	case storePostgres:
		cmd.Env = append(cmd.Env, "DATABASE_URL="+inst.dbURL, "CONNECT_ENCRYPTION_KEY="+base64.StdEncoding.EncodeToString(b.pgKey))
	case storeSQLite:
		cmd.Env = append(cmd.Env, "CONNECT_DATA_DIR="+inst.dataDir)
	}
	if inst.GoMaxProcs > 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(inst.GoMaxProcs))
	}
	return cmd
}

// healthPoll is how often startServer asks a starting server for /health:
// the resolution of the cold-start figures.
const healthPoll = 2 * time.Millisecond

// startServer starts inst's server (on the port it had, if it ran before)
// and returns the time from exec to its first 200 to GET /health.
func (b *bench) startServer(ctx context.Context, inst *instance) (time.Duration, error) {
	if inst.port == "" {
		port, err := freePort()
		if err != nil {
			return 0, err
		}
		inst.port, inst.addr = port, "127.0.0.1:"+port
		inst.url = "http://" + inst.addr
	}
	cmd := b.serverCmd(inst)
	b.starts++
	name := fmt.Sprintf("server-%d-%s", b.starts, inst.Label)
	t0 := time.Now()
	p, err := start(name, cmd, b.tmp)
	if err != nil {
		return 0, err
	}
	b.servers = append(b.servers, p)
	inst.server = p
	inst.logs = append(inst.logs, p.logPath)
	if err := waitHealthy(ctx, p, inst.url, 2*time.Minute, healthPoll); err != nil {
		return 0, fmt.Errorf("%s: %w", inst.Label, err)
	}
	return time.Since(t0), nil
}

// stopServer stops inst's server and fails if it did not exit cleanly.
func (b *bench) stopServer(inst *instance) error {
	if err := inst.server.stop(20 * time.Second); err != nil {
		return fmt.Errorf("%s: %w\n%s", inst.Label, err, inst.server.logTail())
	}
	return nil
}

// target is what one measured run drives: a variant of a server, or the
// bare proxy or the upstream (inst nil).
type target struct {
	inst *instance
	v    variant
}

// makeTargets returns the targets of the rounds: each server's get and
// proxy (those of -variants), then bare and direct.
func (b *bench) makeTargets() []target {
	var out []target
	for _, inst := range b.instances {
		vs := variants(inst.addr, b.bareAddr, b.upstreamAddr, b.apiKey, b.salt)
		for _, name := range b.cfg.Variants {
			if name == "get" || name == "proxy" {
				out = append(out, target{inst: inst, v: vs[name]})
			}
		}
	}
	vs := variants("", b.bareAddr, b.upstreamAddr, b.apiKey, b.salt)
	for _, name := range b.cfg.Variants {
		if name == "bare" || name == "direct" {
			out = append(out, target{v: vs[name]})
		}
	}
	return out
}

// onTmpfs reports whether dir is on a tmpfs, whose files are in memory.
func onTmpfs(dir string) bool {
	var st syscall.Statfs_t
	const tmpfsMagic = 0x01021994
	return syscall.Statfs(dir, &st) == nil && st.Type == tmpfsMagic
}
