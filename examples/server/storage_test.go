package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const backupLine = "back up both together"

// logLines returns the lines of logs that contain s.
func logLines(logs, s string) []string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// createConnection creates the integration zd (once) and the connection id
// with a secret in its credentials, and returns the status of the
// connection's creation.
func createConnection(t *testing.T, base, apiKey, id string) (int, string) {
	t.Helper()
	return call(t, "POST", base+"/connections", apiKey, `{"provider_config_key":"zd","connection_id":"`+id+`",
		"credentials":{"type":"BASIC","username":"ann","password":"pw-`+id+`"},"connection_config":{"subdomain":"acme"}}`)
}

func readConnection(t *testing.T, base, apiKey, id string) {
	t.Helper()
	if status, body := call(t, "GET", base+"/connections/"+id+"?provider_config_key=zd", apiKey, ""); status != 200 ||
		!strings.Contains(body, `"password":"pw-`+id+`"`) {
		t.Errorf("connection %s: %d %s", id, status, body)
	}
}

// TestRunDefaultIsDurable: started without DATABASE_URL or a key, in a
// fresh home, the server keeps its data in ~/.connect/connect.db and makes
// its key once in ~/.connect/encryption.key (0600, the directory 0700);
// started again, it finds both, and says where they are once per start.
func TestRunDefaultIsDurable(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := filepath.Join(home, ".connect")
	apiKey := "test-key-0123456789abcdef"
	var logs syncBuffer
	base, stop := serveLogged(t, map[string]string{"HOME": home, "CONNECT_API_KEY": apiKey}, &logs)
	if status, body := call(t, "POST", base+"/integrations", apiKey, `{"provider":"jira-basic","unique_key":"zd"}`); status != 200 {
		t.Fatalf("create integration: %d %s", status, body)
	}
	if status, body := createConnection(t, base, apiKey, "c1"); status != 201 {
		t.Fatalf("create connection: %d %s", status, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkBackupLine := func(logs string) {
		t.Helper()
		lines := logLines(logs, backupLine)
		if len(lines) != 1 || !strings.Contains(lines[0], "database="+filepath.Join(dir, "connect.db")) ||
			!strings.Contains(lines[0], "key="+filepath.Join(dir, "encryption.key")) {
			t.Errorf("log lines about the data and the key: %q; want one naming both files", lines)
		}
	}
	checkBackupLine(logs.String())

	keyFile := filepath.Join(dir, "encryption.key")
	fi, err := os.Stat(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %04o, want 0600", fi.Mode().Perm())
	}
	if di, err := os.Stat(dir); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("data directory: %v, %v; want mode 0700", di.Mode(), err)
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "connect.db")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("database file: %v, %v; want mode 0600", fi, err)
	}

	var again syncBuffer
	base, stop = serveLogged(t, map[string]string{"HOME": home, "CONNECT_API_KEY": apiKey}, &again)
	readConnection(t, base, apiKey, "c1")
	if status, body := call(t, "GET", base+"/integrations/zd", apiKey, ""); status != 200 {
		t.Errorf("integration after the restart: %d %s", status, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkBackupLine(again.String())
	if key2, err := os.ReadFile(keyFile); err != nil || string(key2) != string(key) {
		t.Errorf("the key file changed at the restart (%v)", err)
	}
	if strings.Contains(logs.String()+again.String(), strings.TrimSpace(string(key))) {
		t.Error("the key is in the log")
	}
}

// TestKill9LosesNothingAcknowledged builds the server, starts it, creates
// connections from several clients and kills it (SIGKILL) while they are
// at it; started again on the same data directory, it has every connection
// whose creation was acknowledged.
func TestKill9LosesNothingAcknowledged(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "server")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dataDir := filepath.Join(t.TempDir(), "data")
	apiKey := "test-key-0123456789abcdef"
	start := func() (base string, cmd *exec.Cmd) {
		t.Helper()
		port := freePort(t)
		cmd = exec.Command(bin)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PORT=" + port,
			"CONNECT_DATA_DIR=" + dataDir, "CONNECT_API_KEY=" + apiKey}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		// Its log, drained so that it never blocks; "listening" means up.
		up := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(stderr)
			once := sync.Once{}
			for sc.Scan() {
				if strings.Contains(sc.Text(), `msg=listening`) {
					once.Do(func() { close(up) })
				}
			}
			io.Copy(io.Discard, stderr)
		}()
		select {
		case <-up:
		case <-time.After(2 * time.Minute):
			t.Fatal("the server did not start within 2 minutes")
		}
		base = "http://127.0.0.1:" + port
		for i := 0; ; i++ {
			resp, err := http.Get(base + "/health")
			if err == nil {
				resp.Body.Close()
				break
			}
			if i == 500 {
				t.Fatalf("the server does not answer: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return base, cmd
	}

	base, cmd := start()
	if status, body := call(t, "POST", base+"/integrations", apiKey, `{"provider":"jira-basic","unique_key":"zd"}`); status != 200 {
		t.Fatalf("create integration: %d %s", status, body)
	}
	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
	)
	killed := make(chan struct{})
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-killed:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				req, _ := http.NewRequest("POST", base+"/connections", strings.NewReader(`{"provider_config_key":"zd","connection_id":"`+id+`",
					"credentials":{"type":"BASIC","username":"ann","password":"pw-`+id+`"},"connection_config":{"subdomain":"acme"}}`))
				req.Header.Set("Authorization", "Bearer "+apiKey)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return // the server is gone
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 == 2 {
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
				}
			}
		}()
	}
	// Kill it once 40 creations are acknowledged, with others in flight.
	// (The limit only turns a server that stopped answering into a
	// failure.)
	limit := time.After(2 * time.Minute)
	for n := 0; n < 40; {
		select {
		case <-limit:
			t.Fatalf("%d creations acknowledged in 2 minutes", n)
		case <-time.After(5 * time.Millisecond):
		}
		mu.Lock()
		n = len(acked)
		mu.Unlock()
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	close(killed)
	wg.Wait()

	base, cmd = start()
	mu.Lock()
	defer mu.Unlock()
	for _, id := range acked {
		readConnection(t, base, apiKey, id)
	}
	t.Logf("%d acknowledged connections found after kill -9", len(acked))
	cmd.Process.Signal(os.Interrupt)
}

// TestDatabaseURLForms: each form of DATABASE_URL that names a SQLite file
// puts the data in that file, and the key made for it in the data
// directory.
func TestDatabaseURLForms(t *testing.T) {
	t.Parallel()
	home := "/home/ann"
	for v, want := range map[string]string{
		"sqlite:rel/connect.db":         "rel/connect.db",
		"sqlite:/abs/connect.db":        "/abs/connect.db",
		"sqlite:///abs/connect.db":      "/abs/connect.db",
		"sqlite3:///abs/connect.db":     "/abs/connect.db",
		"file:rel.db":                   "rel.db",
		"file:///abs/a%20b.db":          "/abs/a b.db",
		"file:/abs/x.db":                "/abs/x.db",
		"/abs/plain.db":                 "/abs/plain.db",
		"plain.db":                      "plain.db",
		"~/data/connect.db":             "/home/ann/data/connect.db",
		"postgres://u@h/db":             "postgres",
		"postgresql://u@h/db?sslmode=x": "postgres",
	} {
		db, err := parseDatabaseURL(envFunc(map[string]string{"DATABASE_URL": v, "HOME": home}))
		got := db.sqlite
		if db.postgres != "" {
			got = "postgres"
		}
		if err != nil || got != want {
			t.Errorf("DATABASE_URL %q: %q, %v; want %q", v, got, err, want)
		}
	}
	for _, v := range []string{"mysql://h/db", "sqlite://host/x.db", "file://host/x.db", "sqlite:x.db?_pragma=foo", "sqlite:", ":memory:"} {
		if _, err := parseDatabaseURL(envFunc(map[string]string{"DATABASE_URL": v})); err == nil {
			t.Errorf("DATABASE_URL %q accepted", v)
		}
	}

	// The server on each form.
	apiKey := "test-key-0123456789abcdef"
	dir := t.TempDir()
	for i, form := range []string{"sqlite:%s", "sqlite://%s", "file://%s", "%s"} {
		path := filepath.Join(dir, fmt.Sprintf("db%d.db", i))
		data := filepath.Join(dir, fmt.Sprintf("data%d", i))
		url := fmt.Sprintf(form, path)
		var logs syncBuffer
		base, stop := serveLogged(t, map[string]string{"DATABASE_URL": url, "CONNECT_DATA_DIR": data, "CONNECT_API_KEY": apiKey}, &logs)
		if status, body := call(t, "POST", base+"/integrations", apiKey, `{"provider":"jira-basic","unique_key":"zd"}`); status != 200 {
			t.Errorf("%s: create integration: %d %s", url, status, body)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s: %v", url, err)
		}
		if _, err := os.Stat(filepath.Join(data, "encryption.key")); err != nil {
			t.Errorf("%s: the key: %v", url, err)
		}
		if _, err := os.Stat(filepath.Join(data, "connect.db")); err == nil {
			t.Errorf("%s: a database in the data directory too", url)
		}
		if lines := logLines(logs.String(), backupLine); len(lines) != 1 || !strings.Contains(lines[0], "database="+path) {
			t.Errorf("%s: log %q", url, lines)
		}
	}
}

// TestRunRefusesUnusableDataDir: a data directory the server cannot make
// or write, a key file others may read, and a database whose key is
// missing each stop the start with a message that says what to do.
func TestRunRefusesUnusableDataDir(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	runErr := func(env map[string]string) error {
		t.Helper()
		env["PORT"] = freePort(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := run(ctx, slog.New(slog.DiscardHandler), envFunc(env))
		if err == nil {
			t.Fatalf("%v: the server started", env)
		}
		return err
	}
	wants := func(err error, parts ...string) {
		t.Helper()
		for _, p := range parts {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("%v: does not say %q", err, p)
			}
		}
	}

	// A directory under a file cannot be made.
	err := runErr(map[string]string{"CONNECT_DATA_DIR": filepath.Join(file, "data")})
	wants(err, "CONNECT_DATA_DIR", filepath.Join(file, "data"), "cannot be created")
	// With the key given, the database still needs the directory.
	key, _ := newKey(t)
	err = runErr(map[string]string{"CONNECT_DATA_DIR": filepath.Join(file, "data"), "CONNECT_ENCRYPTION_KEY": key})
	wants(err, "CONNECT_DATA_DIR", "cannot be created")
	// No home, no data directory.
	wants(runErr(map[string]string{}), "CONNECT_DATA_DIR", "HOME")

	// A directory this user cannot write (root writes anywhere).
	if os.Geteuid() != 0 {
		ro := filepath.Join(tmp, "ro")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		wants(runErr(map[string]string{"CONNECT_DATA_DIR": ro}), "CONNECT_DATA_DIR", ro, "not writable")
	}

	// A key file others may read.
	shared := filepath.Join(tmp, "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shared, "encryption.key"), []byte(key+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(shared, "encryption.key"), 0o644); err != nil {
		t.Fatal(err)
	}
	wants(runErr(map[string]string{"CONNECT_DATA_DIR": shared}), "0644", "chmod 600")

	// A SQLite file in a directory that does not exist.
	err = runErr(map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(tmp, "nowhere", "x.db"), "CONNECT_ENCRYPTION_KEY": key})
	wants(err, "DATABASE_URL", "does not exist")

	// A database without its key: no new key is made for it.
	lost := t.TempDir()
	if err := os.WriteFile(filepath.Join(lost, "connect.db"), []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	wants(runErr(map[string]string{"CONNECT_DATA_DIR": lost}), "encryption key", "missing", "restore")
	if _, err := os.Stat(filepath.Join(lost, "encryption.key")); err == nil {
		t.Error("a new key was made for a database that had one")
	}
}
