package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lib/pq"
)

const (
	buildTimeout    = 10 * time.Minute
	healthTimeout   = 60 * time.Second
	nodeTimeout     = 5 * time.Minute
	nodeTestTimeout = 2 * time.Minute // per node:test test
	shutdownTimeout = 30 * time.Second
)

// e2eWebhookSigningKey is the dev environment's webhook signing key (CONNECT_WEBHOOK_SIGNING_KEY),
// with which e2e/node/webhook.test.mjs verifies the webhooks it receives.
const e2eWebhookSigningKey = "e2e-node-webhook-signing-key-0123456789"

// devEnvVars is what the server is given as CONNECT_DEV_ENV_VARS and what the Node test expects
// back from getEnvironmentVariables. The second value has characters that need escaping on the
// way in and out.
var devEnvVars = map[string]string{
	"E2E_PLAIN":   "plain-value",
	"E2E_SPECIAL": `a b=c&d "quoted" ü`,
}

// TestNodeClient builds the reference server, starts it on a fresh Postgres database and runs
// the node:test files in e2e/node against it with the published @nangohq/node client. See doc.go.
func TestNodeClient(t *testing.T) { testNodeClient(t, false) }

// TestNodeClientSQLite is TestNodeClient on the reference server's default: no DATABASE_URL and
// no key, its SQLite file and the key it makes in a fresh CONNECT_DATA_DIR.
func TestNodeClientSQLite(t *testing.T) { testNodeClient(t, true) }

func testNodeClient(t *testing.T, sqlite bool) {
	requirePostgres := os.Getenv("CONNECT_REQUIRE_POSTGRES") == "1"
	requireNode := requirePostgres || os.Getenv("CI") == "true"

	adminURL := os.Getenv("TEST_DATABASE_URL")
	if adminURL == "" && !sqlite {
		if requirePostgres {
			t.Fatal("TEST_DATABASE_URL is not set and CONNECT_REQUIRE_POSTGRES=1: the end-to-end test needs Postgres")
		}
		t.Skip("TEST_DATABASE_URL is not set; set it (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the end-to-end test")
	}

	nodeBin, err := exec.LookPath("node")
	if err != nil {
		skipOrFail(t, requireNode, "node is not on PATH: install Node.js 20 or newer, then run `npm ci --prefix e2e`")
	}
	e2eDir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e2eDir, "node_modules", "@nangohq", "node", "package.json")); err != nil {
		skipOrFail(t, requireNode, "e2e/node_modules is missing the @nangohq/node client: run `npm ci --prefix e2e` from the repository root")
	}
	testFiles, err := filepath.Glob(filepath.Join(e2eDir, "node", "*.test.mjs"))
	if err != nil || len(testFiles) == 0 {
		t.Fatalf("no e2e/node/*.test.mjs files found (err=%v)", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	bin := buildServer(t, filepath.Dir(e2eDir))
	storage := []string{"CONNECT_DATA_DIR=" + t.TempDir()}
	if !sqlite {
		storage = []string{"DATABASE_URL=" + createDatabase(ctx, t, adminURL),
			"CONNECT_ENCRYPTION_KEY=" + base64.StdEncoding.EncodeToString(randomBytes(t, 32))}
	}

	envVarsJSON, err := json.Marshal(devEnvVars)
	if err != nil {
		t.Fatal(err)
	}
	apiKey := "e2e_" + randomHex(t, 24)
	port := freePort(t)
	// The provider APIs of the proxy tests: the second one is a redirect target on another port.
	upstream2 := startUpstream(t, "")
	upstream := startUpstream(t, upstream2.srv.URL)
	// The host application's webhook endpoint (e2e/node/webhook.test.mjs).
	sink := startWebhookSink(t)
	// The GitHub and Slack APIs of the example functions (e2e/node/functions.test.mjs).
	fnAPIs := startFunctionAPIs(t)
	srv := startServer(ctx, t, bin, append([]string{
		"CONNECT_WEBHOOK_URLS=" + sink.srv.URL + "/hooks",
		"CONNECT_WEBHOOK_SIGNING_KEY=" + e2eWebhookSigningKey,
		// The fake upstreams listen on 127.0.0.1.
		"CONNECT_PROXY_ALLOW_PRIVATE_NETWORKS=true",
		"CONNECT_PROVIDERS_FILE=" + withProviders(t, writeProviders(t, upstream.srv.URL), fnAPIs.providersYAML(t)),
		fnAPIs.serverEnv(),
		"PORT=" + port,
		"CONNECT_API_KEY=" + apiKey,
		"CONNECT_DEV_ENV_VARS=" + string(envVarsJSON),
	}, storage...))
	host := "http://127.0.0.1:" + port
	srv.waitHealthy(ctx, t, host+"/health")

	runNode(ctx, t, nodeBin, e2eDir, testFiles, []string{
		"NANGO_HOST=" + host,
		"NANGO_API_KEY=" + apiKey,
		"CONNECT_DEV_ENV_VARS=" + string(envVarsJSON),
		"NANGO_E2E_UPSTREAM_URL=" + upstream.srv.URL,
		"NANGO_E2E_UPSTREAM2_URL=" + upstream2.srv.URL,
		"NANGO_E2E_WEBHOOK_SINK_URL=" + sink.srv.URL,
		"NANGO_E2E_WEBHOOK_SIGNING_KEY=" + e2eWebhookSigningKey,
		fnAPIs.nodeEnv(t),
		"NO_COLOR=1",
	})
	if sink.count() == 0 {
		t.Error("the webhook tests received no webhook")
	}
	if upstream.count() == 0 {
		t.Error("the proxy tests made no call to the fake upstream")
	}
	for _, u := range []*fakeUpstream{upstream, upstream2} {
		if got := u.leaked(apiKey); len(got) > 0 {
			t.Errorf("the server's API key reached the upstream: %+v", got)
		}
	}
	fnAPIs.check(t, apiKey)

	srv.stop(t)
}

func skipOrFail(t *testing.T, fail bool, msg string) {
	t.Helper()
	if fail {
		t.Fatal(msg + " (required because CI=true or CONNECT_REQUIRE_POSTGRES=1)")
	}
	t.Skip(msg)
}

// builtServer is the reference server binary, built once per run of the
// tests into dir, which TestMain removes.
var builtServer struct {
	once     sync.Once
	dir, bin string
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtServer.dir != "" {
		os.RemoveAll(builtServer.dir)
	}
	os.Exit(code)
}

// buildServer compiles ./examples/server once per run of the tests, with
// raceBuildFlags, and returns the binary's path.
func buildServer(t *testing.T, repoRoot string) string {
	t.Helper()
	builtServer.once.Do(func() {
		builtServer.bin, builtServer.err = compileServer(repoRoot)
	})
	if builtServer.err != nil {
		t.Fatal(builtServer.err)
	}
	return builtServer.bin
}

func compileServer(repoRoot string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command is not on PATH: %v", err)
	}
	if builtServer.dir, err = os.MkdirTemp("", "connect-e2e-"); err != nil {
		return "", err
	}
	bin := filepath.Join(builtServer.dir, "connect-server")
	args := []string{"build", "-o", bin}
	args = append(args, raceBuildFlags...)
	args = append(args, "./examples/server")

	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin, nil
}

// createDatabase creates an empty database on the server adminURL points at and returns its
// URL. It is dropped in Cleanup, which runs after the server's Cleanup has stopped the server.
func createDatabase(ctx context.Context, t *testing.T, adminURL string) string {
	t.Helper()
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("TEST_DATABASE_URL must be a postgres:// URL, got %q (err=%v)", adminURL, err)
	}
	admin, err := sql.Open("postgres", adminURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })

	name := "connect_e2e_" + randomHex(t, 6)
	createCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(createCtx, "CREATE DATABASE "+pq.QuoteIdentifier(name)); err != nil {
		t.Fatalf("creating database %s through TEST_DATABASE_URL: %v", name, err)
	}
	t.Cleanup(func() {
		// DROP DATABASE waits for a checkpoint, which takes tens of seconds on a
		// machine whose disk is busy (40 s each was seen on a loaded 2-core one).
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		// FORCE ends sessions a killed server may have left behind (Postgres 13+).
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pq.QuoteIdentifier(name)+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping database %s: %v", name, err)
		}
	})

	dbURL := *u
	dbURL.Path = "/" + name
	return dbURL.String()
}

// server is a running reference server process.
type server struct {
	cmd     *exec.Cmd
	output  *lockedBuffer // the server's stdout and stderr
	done    chan struct{} // closed when the process has exited; then waitErr is set
	waitErr error
}

// startServer starts the server binary with env added to the environment. The server is
// killed in Cleanup unless stop has already ended it; when the test failed, Cleanup logs the
// server's output.
func startServer(ctx context.Context, t *testing.T, bin string, env []string) *server {
	t.Helper()
	s := &server{output: &lockedBuffer{}, done: make(chan struct{})}
	s.cmd = exec.CommandContext(ctx, bin)
	s.cmd.Env = append(environWithout("PORT", "DATABASE_URL", "CONNECT_"), env...)
	s.cmd.Stdout = s.output
	s.cmd.Stderr = s.output
	s.cmd.WaitDelay = shutdownTimeout
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting the server: %v", err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = s.cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			t.Logf("server output:\n%s", s.output.String())
		}
	})
	return s
}

func (s *server) waitHealthy(ctx context.Context, t *testing.T, healthURL string) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(healthTimeout)
	var last string
	for {
		select {
		case <-s.done:
			t.Fatalf("the server exited before it was healthy: %v (its output is logged below)", s.waitErr)
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, healthURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			var health struct {
				Result string `json:"result"`
			}
			if resp.StatusCode == http.StatusOK && json.Unmarshal(body, &health) == nil && health.Result == "ok" {
				return
			}
			last = fmt.Sprintf("status %d, body %q", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s did not answer 200 {\"result\":\"ok\"} within %s (last: %s; the server's output is logged below)",
				healthURL, healthTimeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop sends SIGTERM and requires a clean exit (code 0). The server's own
// shutdown gives up after 10 s; shutdownTimeout, longer, only catches a
// server that hangs.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("sending SIGTERM to the server: %v", err)
	}
	select {
	case <-s.done:
		if s.waitErr != nil {
			t.Fatalf("the server did not exit cleanly after SIGTERM: %v (its output is logged below)", s.waitErr)
		}
	case <-time.After(shutdownTimeout):
		t.Fatalf("the server did not exit within %s of SIGTERM (its output is logged below)", shutdownTimeout)
	}
}

// runNode runs the node:test files and streams their output into the test log line by line.
func runNode(ctx context.Context, t *testing.T, nodeBin, dir string, files, env []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, nodeTimeout)
	defer cancel()
	args := append([]string{
		"--test",
		"--test-reporter=spec",
		fmt.Sprintf("--test-timeout=%d", nodeTestTimeout.Milliseconds()),
	}, files...)
	cmd := exec.CommandContext(ctx, nodeBin, args...)
	cmd.Dir = dir
	cmd.Env = append(environWithout("NANGO_", "CONNECT_", "NODE_OPTIONS"), env...)
	cmd.WaitDelay = 5 * time.Second

	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			t.Log(sc.Text())
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	pw.Close()
	<-logged

	if ctx.Err() == context.DeadlineExceeded {
		t.Fatalf("node --test did not finish within %s", nodeTimeout)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		t.Fatalf("node --test failed (%v): see the log above", exitErr)
	}
	if err != nil {
		t.Fatalf("running node --test: %v", err)
	}
}

// environWithout returns os.Environ() less the variables whose names start with one of the
// prefixes, so that settings of the developer's shell do not leak into the processes started here.
func environWithout(prefixes ...string) []string {
	var env []string
next:
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				continue next
			}
		}
		env = append(env, kv)
	}
	return env
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	return hex.EncodeToString(randomBytes(t, n))
}

// lockedBuffer is an io.Writer safe for the two copying goroutines of exec.Cmd.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
