package connections

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func testJWK(t testing.TB, bits int) (*rsa.PrivateKey, string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	key.Precompute()
	b64 := func(i *big.Int) string { return base64.RawURLEncoding.EncodeToString(i.Bytes()) }
	j, _ := json.Marshal(map[string]string{"kty": "RSA", "kid": "kid-1", "alg": "RS256",
		"n": b64(key.N), "e": b64(big.NewInt(int64(key.E))), "d": b64(key.D), "p": b64(key.Primes[0]), "q": b64(key.Primes[1]),
		"dp": b64(key.Precomputed.Dp), "dq": b64(key.Precomputed.Dq), "qi": b64(key.Precomputed.Qinv)})
	return key, string(j)
}

// TestParsePrivateJWK: a JWK round-trips to the same key; the assertion
// it signs verifies with the public key and carries the claims.
func TestParsePrivateJWK(t *testing.T) {
	key, jwk := testJWK(t, 2048)
	got, kid, err := ParsePrivateJWK(jwk)
	if err != nil || kid != "kid-1" || got.N.Cmp(key.N) != 0 || got.D.Cmp(key.D) != 0 {
		t.Fatalf("ParsePrivateJWK = %v, %q, %v", got != nil, kid, err)
	}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	a, err := ClientAssertion(got, kid, "cid", "https://idp.example.com/token", now)
	if err != nil {
		t.Fatal(err)
	}
	claims := jwt.MapClaims{}
	tok, err := jwt.ParseWithClaims(a, claims, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil || tok.Header["kid"] != "kid-1" || claims["iss"] != "cid" || claims["sub"] != "cid" ||
		claims["aud"] != "https://idp.example.com/token" || claims["iat"] != float64(now.Unix()) ||
		claims["exp"] != float64(now.Add(ClientAssertionLifetime).Unix()) || len(claims["jti"].(string)) != 32 {
		t.Fatalf("assertion %v %v %v", err, tok.Header, claims)
	}
	var m map[string]string
	_ = json.Unmarshal([]byte(jwk), &m)
	for name, edit := range map[string]func(m map[string]string){
		"EC":        func(m map[string]string) { m["kty"] = "EC" },
		"no kid":    func(m map[string]string) { delete(m, "kid") },
		"ES256":     func(m map[string]string) { m["alg"] = "ES256" },
		"no d":      func(m map[string]string) { delete(m, "d") },
		"bad q":     func(m map[string]string) { m["q"] = m["p"] },
		"bad qi":    func(m map[string]string) { m["qi"] = "AQAB" },
		"not b64":   func(m map[string]string) { m["n"] = "***" },
		"e is huge": func(m map[string]string) { m["e"] = m["n"] },
	} {
		c := map[string]string{}
		for k, v := range m {
			c[k] = v
		}
		edit(c)
		b, _ := json.Marshal(c)
		if _, _, err := ParsePrivateJWK(string(b)); err == nil || strings.Contains(err.Error(), m["d"]) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzParsePrivateJWK: any input is a key or an error without key
// material, never a panic.
func FuzzParsePrivateJWK(f *testing.F) {
	_, jwk := testJWK(f, 2048)
	f.Add(jwk)
	f.Add(`{"kty":"RSA","kid":"k","n":"AQAB","e":"AQAB","d":"AQAB","p":"Aw","q":"Aw"}`)
	f.Add(`{"kty":"RSA"}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, s string) {
		key, kid, err := ParsePrivateJWK(s)
		if err == nil && (key == nil || kid == "" || key.N.BitLen() < 2048) {
			t.Fatalf("accepted %q", s)
		}
	})
}

// FuzzParseClientCertificate: any PEM input is a pair or an error, never
// a panic, and the error never repeats the key.
func FuzzParseClientCertificate(f *testing.F) {
	f.Add("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----")
	f.Add(`-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----`, "")
	f.Fuzz(func(t *testing.T, cert, key string) {
		_, err := ParseClientCertificate(cert, key)
		if err != nil && len(key) > 8 && strings.Contains(err.Error(), key) {
			t.Fatalf("error holds the key: %v", err)
		}
	})
}
