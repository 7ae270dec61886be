package proxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"testing"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store"
)

func selfSigned(t *testing.T, n int) *connections.Credentials {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(n + 1)), Subject: pkix.Name{CommonName: "c"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pk, _ := x509.MarshalPKCS8PrivateKey(key)
	return &connections.Credentials{Type: integrations.AuthModeOAuth2CC,
		ClientCertificate: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		ClientPrivateKey:  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}))}
}

// TestClientCertTransports: one transport per certificate, presenting it
// over a clone of the proxy's transport; at most MaxClientCertTransports
// kept, the least recently used dropped; bad PEM and a Transport that is
// not an *http.Transport are refused.
func TestClientCertTransports(t *testing.T) {
	p, err := New(Config{Source: SourceFunc(nil)})
	if err != nil {
		t.Fatal(err)
	}
	first := selfSigned(t, 0)
	tr, err := p.clientCertTransport(first)
	if err != nil {
		t.Fatal(err)
	}
	ht := tr.(*http.Transport)
	if ht == p.base || len(ht.TLSClientConfig.Certificates) != 1 || ht.DialContext == nil {
		t.Fatalf("transport %+v", ht.TLSClientConfig)
	}
	for i := 1; i <= MaxClientCertTransports; i++ {
		if _, err := p.clientCertTransport(selfSigned(t, i)); err != nil {
			t.Fatal(err)
		}
		if i == MaxClientCertTransports/2 {
			// Used again: moved to the front, so kept.
			if again, _ := p.clientCertTransport(first); again != tr {
				t.Fatal("the same certificate got another transport")
			}
		}
	}
	if n := p.clientCertTransports(); n != MaxClientCertTransports {
		t.Fatalf("%d transports kept", n)
	}
	if again, _ := p.clientCertTransport(first); again != tr {
		t.Fatal("a recently used certificate was evicted")
	}
	if none, err := p.clientCertTransport(&connections.Credentials{}); none != nil || err != nil {
		t.Fatalf("no certificate: %v %v", none, err)
	}
	bad := *first
	bad.ClientPrivateKey = selfSigned(t, 999).ClientPrivateKey
	var se *store.Error
	if _, err := p.clientCertTransport(&bad); !errors.As(err, &se) || se.Code != CodeInvalidClientCertificate {
		t.Fatalf("mismatched key: %v", err)
	}
	custom, _ := New(Config{Source: SourceFunc(nil), Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil })})
	if _, err := custom.clientCertTransport(first); !errors.As(err, &se) || se.Code != CodeInvalidClientCertificate {
		t.Fatalf("custom transport: %v", err)
	}
}
