package integrations

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkTemplateEval evaluates the three per-request header templates
// of BenchmarkProxy's proxy_signed provider (a signature over the method,
// path and a credential; a date; a request id) as the proxy does for each
// request: vars whose clock and ${random} give one value per request, and
// the request. Each result is checked against a value computed here.
//
//	go test -run '^$' -bench BenchmarkTemplateEval ./integrations
func BenchmarkTemplateEval(b *testing.B) {
	at := time.Date(2026, 11, 25, 6, 30, 35, 0, time.UTC)
	u, _ := url.Parse("https://api.example.com/signed/user?page=2")
	vars := &TemplateVars{
		ConnectionConfig: map[string]string{"path": "api"},
		Credentials:      map[string]string{"secret": "bench_secret_0042"},
		AccessToken:      "gho_access_token_0042_xxxxxxxxxxxxxxxxxxxx",
		Now:              func() time.Time { return at },
		Random:           func() string { return "0f8fad5b-d9cb-469f-a165-70867728950e" },
		Request:          &TemplateRequest{Method: "GET", URL: u, Endpoint: "/user"},
	}
	sum := sha256.Sum256([]byte("GET/signed/userbench_secret_0042"))
	for _, c := range []struct{ name, tmpl, want string }{
		{"sha256Hex", "${sha256Hex(${method}${path}${credentials.secret})}", hex.EncodeToString(sum[:])},
		{"now", "${now:ddd, DD MMM YYYY HH:mm:ss ZZ}", "Wed, 25 Nov 2026 06:30:35 +0000"},
		{"random", "${random}", "0f8fad5b-d9cb-469f-a165-70867728950e"},
	} {
		tmpl, err := ParseTemplate(c.tmpl)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got, err := tmpl.Eval(vars)
				if err != nil || got != c.want {
					b.Fatalf("Eval(%s) = %q, %v; want %q", c.tmpl, got, err, c.want)
				}
			}
		})
	}
}

// TestAppendPadded: numbers are written as strconv.Itoa writes them, with
// zeros before them up to the width (the sign counted), as dates pad.
func TestAppendPadded(t *testing.T) {
	for _, c := range []struct{ n, w int }{{0, 1}, {0, 2}, {7, 2}, {42, 2}, {123, 2}, {5, 3}, {999, 3}, {2026, 4}, {26, 4}, {-5, 4}, {-123, 2}} {
		s := strconv.Itoa(c.n)
		want := strings.Repeat("0", max(0, c.w-len(s))) + s
		if got := string(appendPadded([]byte("x"), c.n, c.w)); got != "x"+want {
			t.Errorf("appendPadded(%d, %d) = %q, want %q", c.n, c.w, got, "x"+want)
		}
	}
}

// TestEvalConcurrent: evaluations running at once, each with its own
// values, get their own results (evaluators and their buffers are
// reused between evaluations).
func TestEvalConcurrent(t *testing.T) {
	tmpl, err := ParseTemplate("${base64(${credentials.user}:${hmacSha1Hex(${path}, ${credentials.secret})})}|${now:YYYY-MM-DD}|${sha256Hex(${random})}")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				id := strconv.Itoa(g*1000 + i)
				at := time.Date(2000+i%50, time.Month(1+g), 1+i%28, 0, 0, 0, 0, time.UTC)
				u := &url.URL{Scheme: "https", Host: "h", Path: "/p/" + id}
				vars := &TemplateVars{Credentials: map[string]string{"user": "u" + id, "secret": strings.Repeat("s", i%70+1)},
					Now: func() time.Time { return at }, Random: func() string { return "r" + id },
					Request: &TemplateRequest{Method: "GET", URL: u}}
				m := hmac.New(sha1.New, []byte(vars.Credentials["secret"]))
				m.Write([]byte("/p/" + id))
				sum := sha256.Sum256([]byte("r" + id))
				want := base64.StdEncoding.EncodeToString([]byte("u"+id+":"+hex.EncodeToString(m.Sum(nil)))) +
					"|" + at.Format("2006-01-02") + "|" + hex.EncodeToString(sum[:])
				if got, err := tmpl.Eval(vars); err != nil || got != want {
					t.Errorf("Eval = %q, %v; want %q", got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
