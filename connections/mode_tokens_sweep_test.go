package connections

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/embedauth/connect/integrations"
)

// sweepProvidersFile is Nango's providers.yaml for the sweep:
// CONNECT_NANGO_PROVIDERS_FILE (relative to the module root, as CI sets
// it), else a few entries of it kept in testdata.
func sweepProvidersFile(t *testing.T) string {
	t.Helper()
	if f := os.Getenv("CONNECT_NANGO_PROVIDERS_FILE"); f != "" {
		for _, p := range []string{f, filepath.Join("..", f)} {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
		t.Fatalf("CONNECT_NANGO_PROVIDERS_FILE=%s does not exist", f)
	}
	return filepath.Join("testdata", "nango_token_providers.yaml")
}

// stopTransport records the first request it gets and answers none.
type stopTransport struct {
	mu  sync.Mutex
	got []*http.Request
}

var errSweepStop = errors.New("sweep: request recorded, not sent")

func (s *stopTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.got = append(s.got, r)
	s.mu.Unlock()
	return nil, errSweepStop
}

// sweepKeys are keys of each kind, in PEM.
type sweepKeys struct{ rsa, ec, ed string }

func newSweepKeys(t *testing.T) sweepKeys {
	t.Helper()
	enc := func(k any) string {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	}
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, dk, _ := ed25519.GenerateKey(rand.Reader)
	return sweepKeys{enc(rk), enc(ek), enc(dk)}
}

// sweepCandidates are plausible values tried, in order, for a field with
// a pattern.
var sweepCandidates = []string{"example", "acme", "abc123", "ABC123", "12345", "a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4",
	"YzA4MTVhMTQzZTUzMjc3NTk0ZDY2Nzc1ZmVkOA", "a@example.com", "api.example.com", "https://api.example.com", "US", "us-east-1",
	"2024-01-01", "0123456789abcdef0123456789abcdef01234567", "r1/abc-123",
	"0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF", "abcdef0123456789:0123456789abcdef0123456789abcdef"}

// sweepValue is a placeholder value of a field: a key of the kind the
// provider's signing templates want when they name it, else its enum's
// first value, a value of its format, its example, or a candidate
// matching its pattern.
func sweepValue(p *integrations.Provider, ref, name string, f integrations.FieldSpec, keys sweepKeys) (string, error) {
	signing := ""
	alg := ""
	if p.Token != nil {
		signing += p.Token.SigningKey
		alg, _ = p.Token.Header["alg"].(string)
	}
	if a := p.Assertion; a != nil {
		signing += a.Key
		if a.Type == "saml" {
			alg = "RS256"
		} else if s, ok := a.Header["alg"].(string); ok {
			alg = s
		}
	}
	if strings.Contains(signing, ref+"."+name+".secret") {
		return "0123456789abcdef:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", nil
	}
	if strings.Contains(signing, ref+"."+name+"}") || strings.Contains(signing, ref+"."+name+")") {
		switch {
		case strings.HasPrefix(alg, "ES"):
			return keys.ec, nil
		case strings.HasPrefix(alg, "Ed"):
			return keys.ed, nil
		case strings.HasPrefix(alg, "HS") || (p.Signature != nil && p.Signature.Protocol == "HMAC"):
			return "0123456789abcdef0123456789abcdef", nil
		}
		return keys.rsa, nil
	}
	if len(f.Enum) > 0 {
		return f.Enum[0], nil
	}
	var cands []string
	switch f.Format {
	case "hostname":
		cands = append(cands, "api.example.com")
	case "uri", "url":
		cands = append(cands, "https://api.example.com")
	case "email":
		cands = append(cands, "a@example.com")
	}
	if ex := f.Example; ex != "" && !strings.Contains(ex, "*") && !strings.ContainsAny(ex, "/ ") {
		cands = append(cands, ex)
	}
	cands = append(cands, sweepCandidates...)
	if f.Pattern == "" {
		return cands[0], nil
	}
	re, err := regexp.Compile(f.Pattern)
	if err != nil {
		return "", fmt.Errorf("%s: pattern %q: %v", name, f.Pattern, err)
	}
	for _, c := range cands {
		if re.MatchString(c) {
			return c, nil
		}
	}
	return "", fmt.Errorf("%s: no placeholder matches %s", name, f.Pattern)
}

// TestTokenExchangeSweep: for every TWO_STEP and JWT provider of Nango's
// providers.yaml, with every declared field (credentials, connection
// config, integration_config, assertion_option) filled with a plausible
// value, the exchange signs the JWT, or builds the first token request
// and hands it to the HTTP client (which records it and sends nothing).
func TestTokenExchangeSweep(t *testing.T) {
	t.Parallel()
	ps, err := integrations.LoadFile(sweepProvidersFile(t))
	if err != nil {
		t.Fatal(err)
	}
	keys := newSweepKeys(t)
	n := 0
	for _, p := range ps {
		if p.AuthMode != integrations.AuthModeTwoStep && p.AuthMode != integrations.AuthModeJWT {
			continue
		}
		n++
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			fail := func(err error) { t.Helper(); t.Fatalf("provider %s: %v", p.Name, err) }
			c := &Credentials{Type: p.AuthMode, Inputs: map[string]any{}}
			for _, k := range slices.Sorted(maps.Keys(p.Credentials)) {
				f := p.Credentials[k]
				if f.Automated || (k == "assertion" && p.Assertion != nil) {
					continue
				}
				v, err := sweepValue(p, "credentials", k, f, keys)
				if err != nil {
					fail(err)
				}
				c.Inputs[k] = v
			}
			if len(p.AssertionOption) > 0 {
				opt := map[string]any{}
				for k, f := range p.AssertionOption {
					v, err := sweepValue(p, "assertionOption", k, f, keys)
					if err != nil {
						fail(err)
					}
					opt[k] = v
				}
				c.Inputs["assertionOption"] = opt
			}
			cfg := map[string]string{}
			for k, f := range p.ConnectionConfig {
				v, err := sweepValue(p, "connectionConfig", k, f, keys)
				if err != nil {
					fail(err)
				}
				cfg[k] = v
			}
			integ := map[string]string{}
			for k, f := range p.IntegrationConfig {
				v, err := sweepValue(p, "credentials", k, f, keys)
				if err != nil {
					fail(err)
				}
				integ[k] = v
			}
			tr := &stopTransport{}
			r := &refresher{s: &Service{now: time.Now}, cfg: RefreshConfig{Timeout: 5 * time.Second, HTTPClient: &http.Client{Transport: tr}}}
			out, err := r.exchange(context.Background(), p, c, cfg, integ)
			if p.AuthMode == integrations.AuthModeJWT {
				if err != nil || out.Token == "" {
					fail(fmt.Errorf("the JWT was not signed: %v", err))
				}
				return
			}
			if len(tr.got) == 0 {
				fail(fmt.Errorf("no token request was built: %v", err))
			}
			if first := tr.got[0]; first.URL.Scheme != "https" || first.URL.Host == "" {
				fail(fmt.Errorf("first request to %s", first.URL))
			}
		})
	}
	if n == 0 {
		t.Fatal("the providers file has no TWO_STEP or JWT provider")
	}
}
