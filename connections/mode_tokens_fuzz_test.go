package connections

import (
	"testing"

	"github.com/embedauth/connect/integrations"
)

// FuzzTokenBody: any body of a token-mode auth call is refused with an
// error or read into credentials, never a panic.
func FuzzTokenBody(f *testing.F) {
	f.Add([]byte(`{"type":"TWO_STEP","email":"a","assertionOption":{"privateKey":"k"}}`))
	f.Add([]byte(`{"username":"u","password":5}`))
	f.Add([]byte(`[1]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		body, err := decodeTokenBody(b)
		if err != nil {
			return
		}
		for _, mode := range []string{integrations.AuthModeTwoStep, integrations.AuthModeJWT, integrations.AuthModeSignature, integrations.AuthModeBill} {
			c, err := tokenBodyCredentials(mode, body)
			if err == nil && c.Type != mode {
				t.Fatalf("type %q for %s", c.Type, mode)
			}
		}
	})
}

// FuzzTokenExpiry: expiry values of token responses and the text of a PEM
// key are read without a panic, and a lifetime read is positive.
func FuzzTokenExpiry(f *testing.F) {
	f.Add("3600", 3600.0)
	f.Add("2030-01-01T00:00:00Z", 1.7e12)
	f.Add("1h30m", -1.0)
	f.Fuzz(func(t *testing.T, s string, n float64) {
		for _, v := range []any{s, n} {
			if d, ok := parseExpireIn(v); ok && d <= 0 {
				t.Fatalf("lifetime %v from %v", d, v)
			}
			parseExpireAt(v)
		}
		pemBytes(s)
		answerPath(&exchangeAnswer{text: s}, "")
	})
}
