package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect/internal/pgtest"
)

// freshDatabase creates an empty database through TEST_DATABASE_URL (the
// server always uses the schema "connect" of its DATABASE_URL) and returns
// its URL; it is dropped when the test ends.
func freshDatabase(t *testing.T) string {
	t.Helper()
	admin := pgtest.DB(t)
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	name := "connect_server_" + hex.EncodeToString(b)
	if _, err := admin.ExecContext(t.Context(), "CREATE DATABASE "+pq.QuoteIdentifier(name)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+pq.QuoteIdentifier(name)+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

func newKey(t *testing.T) (b64 string, id string) {
	t.Helper()
	b := make([]byte, 32)
	rand.Read(b)
	sum := sha256.Sum256(b)
	return base64.StdEncoding.EncodeToString(b), "k" + hex.EncodeToString(sum[:4])
}

// serve runs the server with env until stop is called, once /health
// answers; run's error is returned by stop. Without DATABASE_URL and
// CONNECT_DATA_DIR, the data directory is a temporary one.
func serve(t *testing.T, env map[string]string) (base string, stop func() error) {
	t.Helper()
	return serveLogged(t, env, io.Discard)
}

// serveLogged is serve, the server's log written to logs.
func serveLogged(t *testing.T, env map[string]string, logs io.Writer) (base string, stop func() error) {
	t.Helper()
	env["PORT"] = freePort(t)
	if env["DATABASE_URL"] == "" && env["CONNECT_DATA_DIR"] == "" && env["HOME"] == "" {
		env["CONNECT_DATA_DIR"] = t.TempDir() // never the home of whoever runs the tests
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, slog.New(slog.NewTextHandler(logs, nil)), envFunc(env)) }()
	base = "http://127.0.0.1:" + env["PORT"]
	for {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("the server stopped before serving: %v", err)
		default:
		}
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return base, func() error {
		cancel()
		return <-done
	}
}

func call(t *testing.T, method, url, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRunRefusesWithoutItsEncryptionKey: the server, restarted on its
// database with another key (what a command that generates a key on every
// start does), refuses to start and names the key id it lacks; with the
// old key as a previous key it re-encrypts everything, after which the new
// key alone suffices.
func TestRunRefusesWithoutItsEncryptionKey(t *testing.T) {
	t.Parallel()
	dsn := freshDatabase(t)
	keyA, idA := newKey(t)
	keyB, idB := newKey(t)
	keyFile := filepath.Join(t.TempDir(), "connect.key")
	if err := os.WriteFile(keyFile, []byte(keyA+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	apiKey := "test-key-0123456789abcdef"
	env := func(kv ...string) map[string]string {
		m := map[string]string{"DATABASE_URL": dsn, "CONNECT_API_KEY": apiKey, "CONNECT_DEV_ENV_VARS": `{"REGION":"eu"}`}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	reads := func(t *testing.T, base string) {
		t.Helper()
		if status, body := call(t, "GET", base+"/environment-variables", apiKey, ""); status != 200 || !strings.Contains(body, `"value":"eu"`) {
			t.Errorf("variables: %d %s", status, body)
		}
		if status, body := call(t, "GET", base+"/connections/c1?provider_config_key=zd", apiKey, ""); status != 200 ||
			!strings.Contains(body, `"password":"s3cret-pass"`) {
			t.Errorf("connection: %d %s", status, body)
		}
	}

	// First start, with the key in a file: store secrets.
	base, stop := serve(t, env("CONNECT_ENCRYPTION_KEY_FILE", keyFile))
	if status, body := call(t, "POST", base+"/integrations", apiKey, `{"provider":"jira-basic","unique_key":"zd"}`); status != 200 {
		t.Fatalf("create integration: %d %s", status, body)
	}
	if status, body := call(t, "POST", base+"/connections", apiKey, `{"provider_config_key":"zd","connection_id":"c1",
		"credentials":{"type":"BASIC","username":"ann","password":"s3cret-pass"},"connection_config":{"subdomain":"acme"}}`); status != 201 {
		t.Fatalf("import connection: %d %s", status, body)
	}
	reads(t, base)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// A restart with the same key (from the variable this time) works.
	base, stop = serve(t, env("CONNECT_ENCRYPTION_KEY", keyA))
	reads(t, base)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// Another key: refused before serving, naming the missing key id.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	vars := env("CONNECT_ENCRYPTION_KEY", keyB)
	vars["PORT"] = freePort(t)
	err := run(ctx, slog.New(slog.DiscardHandler), envFunc(vars))
	if err == nil {
		t.Fatal("the server started without the key its secrets were sealed with")
	}
	msg := err.Error()
	for _, want := range []string{`key id "` + idA + `"`, "1 connection_credentials", "1 environment_variable", idB, "CONNECT_PREVIOUS_ENCRYPTION_KEYS"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not say %q: %s", want, msg)
		}
	}
	for _, secret := range []string{keyA, keyB, "s3cret-pass", apiKey} {
		if strings.Contains(msg, secret) {
			t.Errorf("the refusal holds a secret: %s", msg)
		}
	}
	if resp, err := http.Get("http://127.0.0.1:" + vars["PORT"] + "/health"); err == nil {
		resp.Body.Close()
		t.Error("the refused server is listening")
	}

	// Rotation: the new key with the old one as a previous key.
	base, stop = serve(t, env("CONNECT_ENCRYPTION_KEY", keyB, "CONNECT_PREVIOUS_ENCRYPTION_KEYS", keyA))
	reads(t, base)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// Everything was re-encrypted: the new key alone starts and reads.
	base, stop = serve(t, env("CONNECT_ENCRYPTION_KEY", keyB))
	reads(t, base)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestEncryptionKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, id := newKey(t)
	good := filepath.Join(dir, "good.key")
	bad := filepath.Join(dir, "bad.key")
	if err := os.WriteFile(good, []byte(" "+key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, _, err := encryptionKeys(envFunc(map[string]string{"CONNECT_ENCRYPTION_KEY_FILE": good}), nil)
	if err != nil || len(keys) != 1 || keys[0].ID != id || base64.StdEncoding.EncodeToString(keys[0].Key) != key {
		t.Errorf("key from a file: %v, %v", keys, err)
	}
	// The id is stable: the same key from the variable has the same id.
	again, _, err := encryptionKeys(envFunc(map[string]string{"CONNECT_ENCRYPTION_KEY": key}), nil)
	if err != nil || again[0].ID != id || !bytes.Equal(again[0].Key, keys[0].Key) {
		t.Errorf("key from the variable: %v, %v", again, err)
	}
	for name, vars := range map[string]map[string]string{
		"missing file": {"CONNECT_ENCRYPTION_KEY_FILE": filepath.Join(dir, "nope.key")},
		"bad file":     {"CONNECT_ENCRYPTION_KEY_FILE": bad},
		"both":         {"CONNECT_ENCRYPTION_KEY_FILE": good, "CONNECT_ENCRYPTION_KEY": key},
	} {
		if _, _, err := encryptionKeys(envFunc(vars), nil); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), key) {
			t.Errorf("%s: the error holds the key: %v", name, err)
		}
	}
}
