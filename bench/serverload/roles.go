package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The helper processes are this program started again with -role as its
// first argument, so that each has a CPU account of its own in
// /proc/<pid>/stat. A helper listens on 127.0.0.1, prints
// "listening <addr>" on stdout, then answers each "stats" line on stdin
// with "stats <connections accepted> <requests served>"; it exits when its
// stdin closes (the bench ended or died).

const (
	roleUpstream = "upstream"
	roleBare     = "bare"

	// upstreamPath is the path the upstream answers, reached through the
	// proxy as /proxy/user (the provider's base URL ends in /api) and
	// through the bare proxy as itself.
	upstreamPath = "/api/user"

	// bareToken is the Authorization the bare proxy adds.
	bareToken = "Bearer bare_fixed_token_0000000000000000000000"

	// envAPIKey passes the server's API key to the upstream, which refuses
	// a request that carries it: the proxy must never forward it.
	envAPIKey = "SERVERLOAD_API_KEY"
)

// upstreamBody is the upstream's answer: a small JSON body (99 bytes, like
// BenchmarkProxy's).
var upstreamBody = []byte(`{"id":12345,"login":"octocat","type":"User","site_admin":false,"name":"The Octocat","plan":"free"}` + "\n")

// roleMain runs a helper role when args (os.Args[1:]) start with
// -role=...; it reports whether it did. It never returns when it did.
func roleMain(args []string) bool {
	if len(args) == 0 || !strings.HasPrefix(args[0], "-role=") {
		return false
	}
	fs := flag.NewFlagSet("serverload helper", flag.ExitOnError)
	role := fs.String("role", "", "upstream or bare")
	upstream := fs.String("upstream", "", "the upstream's URL (bare)")
	_ = fs.Parse(args)
	var err error
	switch *role {
	case roleUpstream:
		err = serveHelper(upstreamHandler(os.Getenv(envAPIKey)))
	case roleBare:
		var h http.Handler
		if h, err = bareProxy(*upstream); err == nil {
			err = serveHelper(h)
		}
	default:
		err = fmt.Errorf("unknown role %q", *role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "serverload %s: %v\n", *role, err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

// upstreamHandler answers upstreamPath with upstreamBody to a request that
// carries an Authorization header other than the server's API key.
func upstreamHandler(apiKey string) http.Handler {
	leaked := "Bearer " + apiKey
	size := strconv.Itoa(len(upstreamBody))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		switch {
		case auth == "":
			http.Error(w, "no Authorization", http.StatusUnauthorized)
			return
		case apiKey != "" && auth == leaked:
			http.Error(w, "the server's API key reached the upstream", http.StatusForbidden)
			return
		case r.URL.Path != upstreamPath:
			http.Error(w, "unknown path "+r.URL.Path, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", size)
		w.Write(upstreamBody)
	})
}

// bareProxy is the baseline: an httputil.ReverseProxy that does the same
// work as the credential-injecting proxy minus ours. Rewrite points the
// request at the upstream and sets a fixed Authorization; the Transport
// keeps enough idle connections for every client, and a pool of copy
// buffers saves the 32 KiB allocation per request, as the proxy does.
func bareProxy(upstream string) (http.Handler, error) {
	target, err := url.Parse(upstream)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("-upstream %q is not an absolute URL", upstream)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	t.DisableCompression = true
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Set("Authorization", bareToken)
		},
		Transport:  t,
		BufferPool: bufferPool{},
	}, nil
}

type bufferPool struct{}

var buffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte  { return *(buffers.Get().(*[]byte)) }
func (bufferPool) Put(b []byte) { buffers.Put(&b) }

// serveHelper serves h on 127.0.0.1 with the reference server's timeouts
// and runs the stdin/stdout control protocol until stdin closes.
func serveHelper(h http.Handler) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var conns, requests atomic.Int64
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		},
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	if _, err := fmt.Printf("listening %s\n", l.Addr()); err != nil {
		return err
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	for {
		select {
		case err := <-errc:
			return err
		case line, ok := <-lines:
			if !ok {
				srv.Close()
				return nil
			}
			if line == "stats" {
				fmt.Printf("stats %d %d\n", conns.Load(), requests.Load())
			}
		}
	}
}

// helperStats are the counters a helper reports.
type helperStats struct {
	Conns    int64 // TCP connections accepted
	Requests int64
}

// parseHelperLine parses the helper's "listening <addr>" or
// "stats <conns> <requests>" line.
func parseHelperLine(line, want string) ([]string, error) {
	f := strings.Fields(line)
	if len(f) == 0 || f[0] != want {
		return nil, fmt.Errorf("helper said %q, want a %q line", line, want)
	}
	return f[1:], nil
}
