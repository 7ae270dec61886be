package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The reference vector of Nango's verifyIncomingWebhookRequest and
// verifyWebhookSignature (wire-compat.md, "Webhook verification").
const (
	vecKey    = "whsec"
	vecBody   = `{"from":"nango","type":"auth","success":true}`
	vecHMAC   = "6d78d13af7c99c98b5c0f5c8c58a00ec1f463f4f69acfa075cb2035d6fab20ea"
	vecLegacy = "5e543c66208c73899f86ed26a6a3521ab7afe1d7520f3454ea506e5eab2619de"
)

// Independent implementations of the three signatures, written from the
// spec rather than shared with sign.go.
func refHMAC(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

func refLegacy(key, body string) string {
	s := sha256.Sum256([]byte(key + body))
	return hex.EncodeToString(s[:])
}

func refV1(key, id, ts, body string) string { return "v1=" + refHMAC(key, id+"."+ts+"."+body) }

func TestSignVector(t *testing.T) {
	t.Parallel()
	at := time.Unix(1777636800, 0)
	h := Sign(vecKey, []byte(vecBody), "d-1", at)
	if got := h.Get(HeaderHMAC); got != vecHMAC || refHMAC(vecKey, vecBody) != vecHMAC {
		t.Errorf("%s = %s, want %s", HeaderHMAC, got, vecHMAC)
	}
	if got := h.Get(HeaderLegacySignature); got != vecLegacy || refLegacy(vecKey, vecBody) != vecLegacy {
		t.Errorf("%s = %s, want %s", HeaderLegacySignature, got, vecLegacy)
	}
	// The names that Nango's receivers read (@nangohq/node's
	// verifyIncomingWebhookRequest and the deprecated
	// verifyWebhookSignature), with the vector's values.
	if got := h.Values("X-Nango-Hmac-Sha256"); len(got) != 1 || got[0] != vecHMAC {
		t.Errorf("X-Nango-Hmac-Sha256 = %q, want %s", got, vecHMAC)
	}
	if got := h.Values("X-Nango-Signature"); len(got) != 1 || got[0] != vecLegacy {
		t.Errorf("X-Nango-Signature = %q, want %s", got, vecLegacy)
	}
	if got := h.Get(HeaderTimestamp); got != "1777636800" {
		t.Errorf("%s = %s", HeaderTimestamp, got)
	}
	if got := h.Get(HeaderDeliveryID); got != "d-1" {
		t.Errorf("%s = %s", HeaderDeliveryID, got)
	}
	if got, want := h.Get(HeaderSignature), refV1(vecKey, "d-1", "1777636800", vecBody); got != want {
		t.Errorf("%s = %s, want %s", HeaderSignature, got, want)
	}
	if h.Get("Content-Type") != "application/json" {
		t.Errorf("Content-Type = %q", h.Get("Content-Type"))
	}
	if err := Verify(h, []byte(vecBody), vecKey, nil); err != nil {
		t.Errorf("Verify without tolerance: %v", err)
	}
	if err := Verify(h, []byte(vecBody), vecKey, &VerifyOptions{Tolerance: time.Minute, Now: func() time.Time { return at.Add(59 * time.Second) }}); err != nil {
		t.Errorf("Verify with tolerance: %v", err)
	}
	// A header built by hand with the vector, as a Nango receiver sees it.
	hand := http.Header{"X-Svc-Hmac-Sha256": {vecHMAC}}
	if err := Verify(hand, []byte(vecBody), vecKey, nil); err != nil {
		t.Errorf("Verify of the vector: %v", err)
	}
}

func TestVerifyFailsClosed(t *testing.T) {
	t.Parallel()
	at := time.Unix(1777636800, 0)
	body := []byte(vecBody)
	now := func() time.Time { return at }
	tol := &VerifyOptions{Tolerance: 5 * time.Minute, Now: now}
	signed := func() http.Header { return Sign(vecKey, body, "del_1", at) }
	with := func(f func(h http.Header)) http.Header { h := signed(); f(h); return h }
	cases := []struct {
		name string
		h    http.Header
		body string
		key  string
		opts *VerifyOptions
	}{
		{"empty key", signed(), vecBody, "", nil},
		{"empty key, tolerance", signed(), vecBody, "", tol},
		{"wrong key", signed(), vecBody, "whsec2", nil},
		{"other body", signed(), vecBody + " ", vecKey, nil},
		{"other body, tolerance", signed(), `{"from":"nango"}`, vecKey, tol},
		{"missing hmac", with(func(h http.Header) { h.Del(HeaderHMAC) }), vecBody, vecKey, nil},
		{"nil header", nil, vecBody, vecKey, nil},
		{"duplicate hmac", with(func(h http.Header) { h.Add(HeaderHMAC, vecHMAC) }), vecBody, vecKey, nil},
		{"duplicate hmac, other case key", with(func(h http.Header) { h["x-svc-hmac-sha256"] = []string{vecHMAC} }), vecBody, vecKey, nil},
		{"empty hmac", with(func(h http.Header) { h.Set(HeaderHMAC, "") }), vecBody, vecKey, nil},
		{"uppercase hmac", with(func(h http.Header) { h.Set(HeaderHMAC, strings.ToUpper(vecHMAC)) }), vecBody, vecKey, nil},
		{"prefixed hmac", with(func(h http.Header) { h.Set(HeaderHMAC, "sha256="+vecHMAC) }), vecBody, vecKey, nil},
		{"short hmac", with(func(h http.Header) { h.Set(HeaderHMAC, vecHMAC[:62]) }), vecBody, vecKey, nil},
		{"long hmac", with(func(h http.Header) { h.Set(HeaderHMAC, vecHMAC+"00") }), vecBody, vecKey, nil},
		{"non-hex hmac", with(func(h http.Header) { h.Set(HeaderHMAC, "zz"+vecHMAC[2:]) }), vecBody, vecKey, nil},
		{"hmac with space", with(func(h http.Header) { h.Set(HeaderHMAC, " "+vecHMAC) }), vecBody, vecKey, nil},
		{"legacy only", http.Header{HeaderLegacySignature: {vecLegacy}}, vecBody, vecKey, nil},
		{"legacy value in hmac header", with(func(h http.Header) { h.Set(HeaderHMAC, vecLegacy) }), vecBody, vecKey, nil},
		{"tolerance: only hmac", http.Header{HeaderHMAC: {vecHMAC}}, vecBody, vecKey, tol},
		{"tolerance: missing signature", with(func(h http.Header) { h.Del(HeaderSignature) }), vecBody, vecKey, tol},
		{"tolerance: missing timestamp", with(func(h http.Header) { h.Del(HeaderTimestamp) }), vecBody, vecKey, tol},
		{"tolerance: missing id", with(func(h http.Header) { h.Del(HeaderDeliveryID) }), vecBody, vecKey, tol},
		{"tolerance: duplicate signature", with(func(h http.Header) { h.Add(HeaderSignature, h.Get(HeaderSignature)) }), vecBody, vecKey, tol},
		{"tolerance: duplicate timestamp", with(func(h http.Header) { h.Add(HeaderTimestamp, h.Get(HeaderTimestamp)) }), vecBody, vecKey, tol},
		{"tolerance: no v1 prefix", with(func(h http.Header) { h.Set(HeaderSignature, strings.TrimPrefix(h.Get(HeaderSignature), "v1=")) }), vecBody, vecKey, tol},
		{"tolerance: v2 prefix", with(func(h http.Header) { h.Set(HeaderSignature, "v2="+strings.TrimPrefix(h.Get(HeaderSignature), "v1=")) }), vecBody, vecKey, tol},
		{"tolerance: two signatures in one value", with(func(h http.Header) { h.Set(HeaderSignature, h.Get(HeaderSignature)+","+h.Get(HeaderSignature)) }), vecBody, vecKey, tol},
		{"tolerance: uppercase signature", with(func(h http.Header) { h.Set(HeaderSignature, "v1="+strings.ToUpper(h.Get(HeaderSignature)[3:])) }), vecBody, vecKey, tol},
		{"tolerance: too old", signed(), vecBody, vecKey, &VerifyOptions{Tolerance: time.Minute, Now: func() time.Time { return at.Add(61 * time.Second) }}},
		{"tolerance: too new", signed(), vecBody, vecKey, &VerifyOptions{Tolerance: time.Minute, Now: func() time.Time { return at.Add(-61 * time.Second) }}},
		{"tolerance: other timestamp", with(func(h http.Header) { h.Set(HeaderTimestamp, "1777636801") }), vecBody, vecKey, tol},
		{"tolerance: timestamp with plus", with(func(h http.Header) { h.Set(HeaderTimestamp, "+1777636800") }), vecBody, vecKey, tol},
		{"tolerance: timestamp with zero", with(func(h http.Header) { h.Set(HeaderTimestamp, "01777636800") }), vecBody, vecKey, tol},
		{"tolerance: timestamp in ms", with(func(h http.Header) { h.Set(HeaderTimestamp, "1777636800000") }), vecBody, vecKey, tol},
		{"tolerance: other id", with(func(h http.Header) { h.Set(HeaderDeliveryID, "del_2") }), vecBody, vecKey, tol},
		{"tolerance: id with dot", with(func(h http.Header) { h.Set(HeaderDeliveryID, "del.1") }), vecBody, vecKey, tol},
		{"tolerance: wrong key", signed(), vecBody, "whsec2", tol},
	}
	for _, c := range cases {
		err := Verify(c.h, []byte(c.body), c.key, c.opts)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
		} else if !errors.Is(err, ErrInvalidSignature) {
			t.Errorf("%s: %v does not match ErrInvalidSignature", c.name, err)
		}
	}
	// The "." separator cannot be moved between id, timestamp and body: a
	// signature over id "a.1", timestamp "2" and body "x" is also one over
	// id "a", timestamp "1" and body "2.x", so Verify refuses ids with a
	// dot (Sign is only ever given UUIDs).
	dotted := Sign(vecKey, []byte("x"), "a.1", time.Unix(2, 0))
	if err := Verify(dotted, []byte("x"), vecKey, &VerifyOptions{Tolerance: time.Minute, Now: func() time.Time { return time.Unix(2, 0) }}); err == nil {
		t.Error("delivery id with a dot accepted")
	}
}

// FuzzVerify checks that Verify never panics and never accepts a body and
// headers that Sign did not produce for the key: whenever it accepts, the
// header it checked must equal the reference signature of the body.
func FuzzVerify(f *testing.F) {
	at := time.Unix(1777636800, 0)
	good := Sign(vecKey, []byte(vecBody), "del_1", at)
	f.Add(vecKey, []byte(vecBody), good.Get(HeaderHMAC), good.Get(HeaderSignature), good.Get(HeaderTimestamp), "del_1", int64(0), false)
	f.Add(vecKey, []byte(vecBody), good.Get(HeaderHMAC), good.Get(HeaderSignature), good.Get(HeaderTimestamp), "del_1", int64(0), true)
	f.Add(vecKey, []byte(vecBody+" "), strings.ToUpper(vecHMAC), "v1=", "1777636800", "del.1", int64(-400), true)
	f.Add("", []byte(""), "", "", "", "", int64(0), false)
	f.Add("k", []byte("{}"), refHMAC("k", "{}"), refV1("k", "x", "0", "{}"), "0", "x", int64(-1777636800), true)
	f.Fuzz(func(t *testing.T, key string, body []byte, hmacHdr, sigHdr, ts, id string, skew int64, timed bool) {
		h := http.Header{}
		h.Set(HeaderHMAC, hmacHdr)
		h.Set(HeaderSignature, sigHdr)
		h.Set(HeaderTimestamp, ts)
		h.Set(HeaderDeliveryID, id)
		var opts *VerifyOptions
		if timed {
			opts = &VerifyOptions{Tolerance: 5 * time.Minute, Now: func() time.Time { return at.Add(time.Duration(skew) * time.Second) }}
		}
		err := Verify(h, body, key, opts)
		if err != nil {
			if !errors.Is(err, ErrInvalidSignature) {
				t.Fatalf("error %v does not match ErrInvalidSignature", err)
			}
			return
		}
		if key == "" {
			t.Fatal("accepted with an empty key")
		}
		if !timed {
			if hmacHdr != refHMAC(key, string(body)) {
				t.Fatalf("accepted %s=%q for body %q", HeaderHMAC, hmacHdr, body)
			}
			return
		}
		sec, perr := strconv.ParseInt(ts, 10, 64)
		if perr != nil || strconv.FormatInt(sec, 10) != ts {
			t.Fatalf("accepted timestamp %q", ts)
		}
		// What Sign produces for this key, body, id and time.
		want := Sign(key, body, id, time.Unix(sec, 0))
		if sigHdr != want.Get(HeaderSignature) || sigHdr != refV1(key, id, ts, string(body)) {
			t.Fatalf("accepted %s=%q (id %q, ts %q) for body %q", HeaderSignature, sigHdr, id, ts, body)
		}
		if d := at.Add(time.Duration(skew) * time.Second).Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
			t.Fatalf("accepted timestamp %s off by %s", ts, d)
		}
		if strings.Contains(id, ".") {
			t.Fatalf("accepted delivery id %q", id)
		}
	})
}

// TestSignRoundTrip signs many bodies and checks that Verify accepts each
// and refuses every one-byte change of the body.
func TestSignRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Unix(1777636800, 0)
	opts := &VerifyOptions{Tolerance: time.Minute, Now: func() time.Time { return at }}
	for i, body := range []string{"", "{}", vecBody, strings.Repeat("x", 1000), "\x00\xff"} {
		key := "key-" + strconv.Itoa(i) + "-0123456789abcdef"
		h := Sign(key, []byte(body), NewID(), at)
		if err := Verify(h, []byte(body), key, nil); err != nil {
			t.Errorf("body %d: %v", i, err)
		}
		if err := Verify(h, []byte(body), key, opts); err != nil {
			t.Errorf("body %d with tolerance: %v", i, err)
		}
		for j := 0; j < len(body) && j < 50; j++ {
			b := []byte(body)
			b[j] ^= 1
			if Verify(h, b, key, nil) == nil || Verify(h, b, key, opts) == nil {
				t.Errorf("body %d changed at %d accepted", i, j)
			}
		}
	}
}
