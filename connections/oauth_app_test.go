package connections

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestParseRSAKey: PKCS #1 and #8 PEM, the PEM base64-encoded again, and
// the PEM with literal \n, all give the key; anything else is an error.
func TestParseRSAKey(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pkcs1 := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	der8, _ := x509.MarshalPKCS8PrivateKey(key)
	pkcs8 := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der8}))
	for name, in := range map[string]string{
		"pkcs1": pkcs1, "pkcs8": pkcs8, "base64": base64.StdEncoding.EncodeToString([]byte(pkcs8)),
		"escaped newlines": strings.ReplaceAll(pkcs1, "\n", `\n`), "spaces": "  " + pkcs1 + "\n\n",
	} {
		got, err := parseRSAKey(in)
		if err != nil || !got.Equal(key) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, in := range []string{"", "not a key", "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----", base64.StdEncoding.EncodeToString([]byte("x"))} {
		if _, err := parseRSAKey(in); err == nil {
			t.Errorf("parseRSAKey(%q) accepted", in)
		}
	}

	// The app JWT: RS256, iss the app id, issued a minute back, valid 9
	// minutes.
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	signed, err := appJWT("123", key, now)
	if err != nil {
		t.Fatal(err)
	}
	claims := &jwt.RegisteredClaims{}
	if _, err := jwt.ParseWithClaims(signed, claims, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(func() time.Time { return now })); err != nil {
		t.Fatal(err)
	}
	if claims.Issuer != "123" || !claims.IssuedAt.Equal(now.Add(-time.Minute)) || !claims.ExpiresAt.Equal(now.Add(9*time.Minute)) {
		t.Errorf("claims %+v", claims)
	}
}

func FuzzParseRSAKey(f *testing.F) {
	f.Add("-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----")
	f.Add("LS0tLS1CRUdJTg==")
	f.Add(`-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----`)
	f.Fuzz(func(t *testing.T, s string) {
		k, err := parseRSAKey(s)
		if (k == nil) == (err == nil) {
			t.Fatalf("parseRSAKey(%q) = %v, %v", s, k, err)
		}
	})
}
