package webhooks_test

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/webhooks"
)

// catalogSig returns the signature data of a provider of the embedded
// catalogue, so that the tests check the real data.
func catalogSig(t testing.TB, provider string) *integrations.WebhookSignature {
	t.Helper()
	c, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	p, ok := c.Get(provider)
	if !ok || p.WebhookRouting == nil || p.WebhookRouting.Signature == nil {
		t.Fatalf("provider %s has no webhook signature data", provider)
	}
	return p.WebhookRouting.Signature
}

// mac computes an HMAC independently of the code under test.
func mac(h func() hash.Hash, key, msg string) []byte {
	m := hmac.New(h, []byte(key))
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func macHex(key, msg string) string { return hex.EncodeToString(mac(sha256.New, key, msg)) }
func macB64(key, msg string) string {
	return base64.StdEncoding.EncodeToString(mac(sha256.New, key, msg))
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

type verifyCase struct {
	name   string
	secret string
	req    webhooks.SignedRequest
	now    time.Time
	reason string // "" means valid
}

func runVerify(t *testing.T, sig *integrations.WebhookSignature, cases []verifyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := webhooks.VerifyProviderSignature(sig, tc.secret, tc.req, tc.now)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("valid signature refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want refusal %s", tc.reason)
			}
			if !errors.Is(err, webhooks.ErrInvalidProviderSignature) {
				t.Errorf("error %v does not match ErrInvalidProviderSignature", err)
			}
			if got := webhooks.SignatureReason(err); got != tc.reason {
				t.Errorf("reason = %q, want %q (%v)", got, tc.reason, err)
			}
		})
	}
}

// TestVerifyGitHub uses GitHub's published example ("Validating webhook
// deliveries"): secret "It's a Secret to Everybody", payload "Hello,
// World!".
func TestVerifyGitHub(t *testing.T) {
	t.Parallel()
	const (
		secret = "It's a Secret to Everybody"
		body   = "Hello, World!"
		good   = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	)
	if got := "sha256=" + macHex(secret, body); got != good {
		t.Fatalf("test vector: %s", got)
	}
	now := time.Unix(1_700_000_000, 0)
	req := func(h http.Header, b string) webhooks.SignedRequest {
		return webhooks.SignedRequest{Method: "POST", URL: "https://x.test/webhook/dev/gh", Header: h, Body: []byte(b)}
	}
	sha1Hex := hex.EncodeToString(mac(sha1.New, secret, body))
	runVerify(t, catalogSig(t, "github"), []verifyCase{
		{"valid", secret, req(hdr("X-Hub-Signature-256", good), body), now, ""},
		{"valid uppercase hex", secret, req(hdr("X-Hub-Signature-256", "sha256="+strings.ToUpper(good[7:])), body), now, ""},
		{"valid surrounding space", secret, req(hdr("X-Hub-Signature-256", " "+good+" "), body), now, ""},
		{"github-app data", secret, req(hdr("X-Hub-Signature-256", good), body), now, ""},
		{"wrong secret", "other", req(hdr("X-Hub-Signature-256", good), body), now, webhooks.ReasonMismatch},
		{"tampered body", secret, req(hdr("X-Hub-Signature-256", good), body+" "), now, webhooks.ReasonMismatch},
		{"no header", secret, req(hdr(), body), now, webhooks.ReasonMissingHeader},
		{"empty header", secret, req(hdr("X-Hub-Signature-256", ""), body), now, webhooks.ReasonMissingHeader},
		{"legacy sha1 header only", secret, req(hdr("X-Hub-Signature", "sha1="+sha1Hex), body), now, webhooks.ReasonMissingHeader},
		{"no prefix", secret, req(hdr("X-Hub-Signature-256", good[7:]), body), now, webhooks.ReasonMalformedHeader},
		{"sha1 prefix", secret, req(hdr("X-Hub-Signature-256", "sha1="+sha1Hex), body), now, webhooks.ReasonMalformedHeader},
		{"repeated header", secret, req(hdr("X-Hub-Signature-256", good, "X-Hub-Signature-256", good), body), now, webhooks.ReasonMalformedHeader},
		{"truncated", secret, req(hdr("X-Hub-Signature-256", good[:len(good)-2]), body), now, webhooks.ReasonWrongLength},
		{"too long", secret, req(hdr("X-Hub-Signature-256", good+"00"), body), now, webhooks.ReasonWrongLength},
		{"prefix only", secret, req(hdr("X-Hub-Signature-256", "sha256="), body), now, webhooks.ReasonWrongLength},
		{"odd hex", secret, req(hdr("X-Hub-Signature-256", good[:len(good)-1]), body), now, webhooks.ReasonBadEncoding},
		{"not hex", secret, req(hdr("X-Hub-Signature-256", "sha256="+strings.Repeat("zz", 32)), body), now, webhooks.ReasonBadEncoding},
		{"sha1 digest in 256 header", secret, req(hdr("X-Hub-Signature-256", "sha256="+sha1Hex), body), now, webhooks.ReasonWrongLength},
		{"no secret", "", req(hdr("X-Hub-Signature-256", good), body), now, webhooks.ReasonNoSecret},
	})
	// github-app shares the data.
	if err := webhooks.VerifyProviderSignature(catalogSig(t, "github-app"), secret, req(hdr("X-Hub-Signature-256", good), body), now); err != nil {
		t.Errorf("github-app: %v", err)
	}
}

// TestVerifySlack uses Slack's published example ("Verifying requests from
// Slack").
func TestVerifySlack(t *testing.T) {
	t.Parallel()
	const (
		secret = "8f742231b10e8888abcd99yyyzzz85a5"
		ts     = "1531420618"
		body   = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
		good   = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
	)
	if got := "v0=" + macHex(secret, "v0:"+ts+":"+body); got != good {
		t.Fatalf("test vector: %s", got)
	}
	at := time.Unix(1531420618, 0)
	req := func(h http.Header) webhooks.SignedRequest {
		return webhooks.SignedRequest{Method: "POST", URL: "https://x.test/webhook/dev/slack", Header: h, Body: []byte(body)}
	}
	sigTS := func(ts string) http.Header {
		return hdr("X-Slack-Signature", good, "X-Slack-Request-Timestamp", ts)
	}
	resigned := func(ts string) http.Header {
		return hdr("X-Slack-Signature", "v0="+macHex(secret, "v0:"+ts+":"+body), "X-Slack-Request-Timestamp", ts)
	}
	runVerify(t, catalogSig(t, "slack"), []verifyCase{
		{"valid", secret, req(sigTS(ts)), at.Add(10 * time.Second), ""},
		{"valid at the edge", secret, req(sigTS(ts)), at.Add(300 * time.Second), ""},
		{"valid slightly ahead", secret, req(sigTS(ts)), at.Add(-30 * time.Second), ""},
		{"stale", secret, req(sigTS(ts)), at.Add(301 * time.Second), webhooks.ReasonStaleTimestamp},
		{"far future", secret, req(sigTS(ts)), at.Add(-301 * time.Second), webhooks.ReasonStaleTimestamp},
		{"timestamp changed", secret, req(sigTS("1531420619")), at, webhooks.ReasonMismatch},
		{"re-signed fresh", secret, req(resigned("1531420700")), at.Add(100 * time.Second), ""},
		{"no timestamp", secret, req(hdr("X-Slack-Signature", good)), at, webhooks.ReasonMissingTimestamp},
		{"empty timestamp", secret, req(sigTS("")), at, webhooks.ReasonMissingTimestamp},
		{"timestamp not a number", secret, req(sigTS("15314206l8")), at, webhooks.ReasonBadTimestamp},
		{"negative timestamp", secret, req(sigTS("-1531420618")), at, webhooks.ReasonBadTimestamp},
		{"timestamp overflow", secret, req(sigTS("99999999999999999999")), at, webhooks.ReasonBadTimestamp},
		{"repeated timestamp", secret, req(hdr("X-Slack-Signature", good, "X-Slack-Request-Timestamp", ts, "X-Slack-Request-Timestamp", ts)), at, webhooks.ReasonBadTimestamp},
		{"wrong version", secret, req(hdr("X-Slack-Signature", "v1="+good[3:], "X-Slack-Request-Timestamp", ts)), at, webhooks.ReasonMalformedHeader},
		{"no signature", secret, req(hdr("X-Slack-Request-Timestamp", ts)), at, webhooks.ReasonMissingHeader},
		{"no secret", "", req(sigTS(ts)), at, webhooks.ReasonNoSecret},
	})
}

func TestVerifyStripe(t *testing.T) {
	t.Parallel()
	const (
		secret = "whsec_test_5ecret"
		body   = `{"id":"evt_1","object":"event","account":"acct_123","type":"customer.created","note":"${timestamp}"}`
	)
	ts := "1700000000"
	at := time.Unix(1700000000, 0)
	v1 := macHex(secret, ts+"."+body)
	other := macHex("whsec_old", ts+"."+body)
	req := func(v string) webhooks.SignedRequest {
		return webhooks.SignedRequest{Method: "POST", URL: "https://x.test/webhook/dev/stripe", Header: hdr("Stripe-Signature", v), Body: []byte(body)}
	}
	runVerify(t, catalogSig(t, "stripe"), []verifyCase{
		{"valid", secret, req("t=" + ts + ",v1=" + v1), at, ""},
		{"valid with v0 and spaces", secret, req("t=" + ts + ", v1=" + v1 + ", v0=" + strings.Repeat("0", 64)), at, ""},
		{"valid second v1 (secret rotation)", secret, req("t=" + ts + ",v1=" + other + ",v1=" + v1), at, ""},
		{"valid despite a malformed v1", secret, req("t=" + ts + ",v1=zz,v1=" + v1), at, ""},
		{"valid order reversed", secret, req("v1=" + v1 + ",t=" + ts), at.Add(-time.Minute), ""},
		{"unknown elements ignored", secret, req("t=" + ts + ",v1=" + v1 + ",x=y"), at, ""},
		{"wrong secret", "whsec_other", req("t=" + ts + ",v1=" + v1), at, webhooks.ReasonMismatch},
		{"stale", secret, req("t=" + ts + ",v1=" + v1), at.Add(5*time.Minute + time.Second), webhooks.ReasonStaleTimestamp},
		{"other timestamp", secret, req("t=1700000001,v1=" + v1), at, webhooks.ReasonMismatch},
		{"v0 only", secret, req("t=" + ts + ",v0=" + v1), at, webhooks.ReasonMalformedHeader},
		{"no timestamp", secret, req("v1=" + v1), at, webhooks.ReasonMissingTimestamp},
		{"empty timestamp", secret, req("t=,v1=" + v1), at, webhooks.ReasonMissingTimestamp},
		{"two timestamps", secret, req("t=" + ts + ",t=" + ts + ",v1=" + v1), at, webhooks.ReasonMalformedHeader},
		{"element without =", secret, req("t=" + ts + ",v1=" + v1 + ",junk"), at, webhooks.ReasonMalformedHeader},
		{"empty element", secret, req("t=" + ts + ",,v1=" + v1), at, webhooks.ReasonMalformedHeader},
		{"plain digest", secret, req(v1), at, webhooks.ReasonMalformedHeader},
		{"bad hex only", secret, req("t=" + ts + ",v1=xyz"), at, webhooks.ReasonBadEncoding},
		{"short only", secret, req("t=" + ts + ",v1=abcd"), at, webhooks.ReasonWrongLength},
		{"too many elements", secret, req("t=" + ts + strings.Repeat(",v1="+other, 40) + ",v1=" + v1), at, webhooks.ReasonMalformedHeader},
		{"no header", secret, webhooks.SignedRequest{Body: []byte(body), Header: hdr()}, at, webhooks.ReasonMissingHeader},
	})
}

func TestVerifyShopify(t *testing.T) {
	t.Parallel()
	const (
		secret = "shpss_client_secret"
		body   = `{"id":820982911946154508,"email":"jon@example.com"}`
	)
	good := macB64(secret, body)
	req := func(v string) webhooks.SignedRequest {
		return webhooks.SignedRequest{Method: "POST", URL: "https://x.test/webhook/dev/shop", Body: []byte(body),
			Header: hdr("X-Shopify-Hmac-Sha256", v, "X-Shopify-Shop-Domain", "my-store.myshopify.com")}
	}
	now := time.Now()
	runVerify(t, catalogSig(t, "shopify"), []verifyCase{
		{"valid", secret, req(good), now, ""},
		{"hex instead of base64", secret, req(macHex(secret, body)), now, webhooks.ReasonWrongLength},
		{"not base64", secret, req("%%%"), now, webhooks.ReasonBadEncoding},
		{"unpadded", secret, req(strings.TrimRight(good, "=")), now, webhooks.ReasonBadEncoding},
		{"short", secret, req(base64.StdEncoding.EncodeToString([]byte("sixteen bytes..."))), now, webhooks.ReasonWrongLength},
		{"wrong secret", "x", req(good), now, webhooks.ReasonMismatch},
		{"no secret", "", req(good), now, webhooks.ReasonNoSecret},
	})
}

func TestVerifyHubSpot(t *testing.T) {
	t.Parallel()
	const (
		secret = "hubspot-client-secret"
		body   = `[{"eventId":1,"portalId":62515,"subscriptionType":"contact.creation"}]`
		url    = "https://connect.example.com/webhook/dev/hubspot"
	)
	at := time.UnixMilli(1_700_000_000_123)
	ts := strconv.FormatInt(at.UnixMilli(), 10)
	good := macB64(secret, "POST"+url+body+ts)
	req := func(method, u, sig, ts string) webhooks.SignedRequest {
		return webhooks.SignedRequest{Method: method, URL: u, Body: []byte(body),
			Header: hdr("X-HubSpot-Signature-v3", sig, "X-HubSpot-Request-Timestamp", ts)}
	}
	// HubSpot decodes %3A and friends in the URI before signing.
	encURL := url + "?scope=a%3Ab&x=%2f"
	decSig := macB64(secret, "POST"+url+"?scope=a:b&x=/"+body+ts)
	// A signature over the URL as sent is accepted as well.
	rawSig := macB64(secret, "POST"+encURL+body+ts)
	runVerify(t, catalogSig(t, "hubspot"), []verifyCase{
		{"valid", secret, req("POST", url, good, ts), at.Add(time.Minute), ""},
		{"wrong method", secret, req("PUT", url, good, ts), at, webhooks.ReasonMismatch},
		{"wrong url", secret, req("POST", url+"x", good, ts), at, webhooks.ReasonMismatch},
		{"decoded reserved characters", secret, req("POST", encURL, decSig, ts), at, ""},
		{"url as sent", secret, req("POST", encURL, rawSig, ts), at, ""},
		{"stale", secret, req("POST", url, good, ts), at.Add(5*time.Minute + time.Millisecond), webhooks.ReasonStaleTimestamp},
		{"seconds instead of milliseconds", secret, req("POST", url, macB64(secret, "POST"+url+body+"1700000000"), "1700000000"), at, webhooks.ReasonStaleTimestamp},
		{"no timestamp", secret, webhooks.SignedRequest{Method: "POST", URL: url, Body: []byte(body), Header: hdr("X-HubSpot-Signature-v3", good)}, at, webhooks.ReasonMissingTimestamp},
		{"v1 header only", secret, webhooks.SignedRequest{Method: "POST", URL: url, Body: []byte(body), Header: hdr("X-HubSpot-Signature", good, "X-HubSpot-Request-Timestamp", ts)}, at, webhooks.ReasonMissingHeader},
	})
}

func TestVerifyLinear(t *testing.T) {
	t.Parallel()
	const (
		secret = "lin_wh_secret"
		body   = `{"action":"create","type":"Issue","organizationId":"org-1","webhookTimestamp":1700000000000}`
	)
	good := macHex(secret, body)
	req := func(v string) webhooks.SignedRequest {
		return webhooks.SignedRequest{Method: "POST", URL: "https://x.test/webhook/dev/linear", Body: []byte(body), Header: hdr("Linear-Signature", v)}
	}
	now := time.Now()
	runVerify(t, catalogSig(t, "linear"), []verifyCase{
		{"valid", secret, req(good), now, ""},
		{"with a prefix", secret, req("sha256=" + good), now, webhooks.ReasonBadEncoding},
		{"base64", secret, req(macB64(secret, body)), now, webhooks.ReasonBadEncoding},
		{"wrong secret", "x", req(good), now, webhooks.ReasonMismatch},
	})
}

// TestVerifyUnsupportedData checks that data the verifier does not
// understand refuses every delivery instead of accepting it unchecked.
func TestVerifyUnsupportedData(t *testing.T) {
	t.Parallel()
	const secret, body = "s", "{}"
	good := macHex(secret, body)
	req := webhooks.SignedRequest{Method: "POST", URL: "https://x.test/", Body: []byte(body),
		Header: hdr("X-Sig", good, "X-Ts", "1700000000")}
	base := integrations.WebhookSignature{Header: "X-Sig", Algorithm: "HMAC-SHA256", Encoding: "hex"}
	if err := webhooks.VerifyProviderSignature(&base, secret, req, time.Now()); err != nil {
		t.Fatalf("base data: %v", err)
	}
	tests := []struct {
		name string
		mod  func(s *integrations.WebhookSignature)
	}{
		{"no header", func(s *integrations.WebhookSignature) { s.Header = "" }},
		{"unknown algorithm", func(s *integrations.WebhookSignature) { s.Algorithm = "HMAC-MD5" }},
		{"unknown encoding", func(s *integrations.WebhookSignature) { s.Encoding = "base32" }},
		{"unknown format", func(s *integrations.WebhookSignature) { s.Format = "json" }},
		{"key_value without key", func(s *integrations.WebhookSignature) { s.Format = "key_value" }},
		{"unknown placeholder", func(s *integrations.WebhookSignature) { s.SignedPayload = "${body}${secret}" }},
		{"unterminated placeholder", func(s *integrations.WebhookSignature) { s.SignedPayload = "${body" }},
		{"timestamp without source", func(s *integrations.WebhookSignature) { s.SignedPayload = "${timestamp}.${body}" }},
		{"max age without source", func(s *integrations.WebhookSignature) { s.MaxAge = 300 }},
		{"unknown unit", func(s *integrations.WebhookSignature) { s.TimestampHeader, s.TimestampUnit = "X-Ts", "minutes" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			tt.mod(&s)
			err := webhooks.VerifyProviderSignature(&s, secret, req, time.Now())
			if webhooks.SignatureReason(err) != webhooks.ReasonUnsupported {
				t.Errorf("err = %v, want %s", err, webhooks.ReasonUnsupported)
			}
		})
	}
	if err := webhooks.VerifyProviderSignature(nil, secret, req, time.Now()); webhooks.SignatureReason(err) != webhooks.ReasonUnsupported {
		t.Errorf("nil data: %v", err)
	}
}

// TestVerifyTemplate checks the placeholders and that values substituted
// into the signed payload are not expanded again.
func TestVerifyTemplate(t *testing.T) {
	t.Parallel()
	const secret = "k"
	sig := &integrations.WebhookSignature{Header: "X-Sig", Algorithm: "HMAC-SHA1", Encoding: "base64",
		TimestampHeader: "X-Ts", SignedPayload: "$${method}|${url}|${timestamp}|${body}|$"}
	body := "${timestamp}${url}"
	msg := "$PATCH|https://h.test/p?q=1|42|" + body + "|$"
	good := base64.StdEncoding.EncodeToString(mac(sha1.New, secret, msg))
	req := webhooks.SignedRequest{Method: "PATCH", URL: "https://h.test/p?q=1", Body: []byte(body),
		Header: hdr("X-Sig", good, "X-Ts", "42")}
	if err := webhooks.VerifyProviderSignature(sig, secret, req, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Without MaxAge an old timestamp is fine, but it must be present.
	req.Header.Del("X-Ts")
	if err := webhooks.VerifyProviderSignature(sig, secret, req, time.Now()); webhooks.SignatureReason(err) != webhooks.ReasonMissingTimestamp {
		t.Errorf("without timestamp: %v", err)
	}
}

// FuzzVerifyProviderSignature checks that verification never panics, that
// every refusal is a SignatureError, and that a request signed the way the
// data says is accepted.
func FuzzVerifyProviderSignature(f *testing.F) {
	f.Add(uint8(0), "sha256=00", "", []byte("{}"), "secret", "")
	f.Add(uint8(1), "t=1,v1=ab,v1=", "1", []byte(`{"a":1}`), "whsec", "${timestamp}.${body}")
	f.Add(uint8(2), "v0=zz", "1700000000", []byte("body"), "s", "v0:${timestamp}:${body}")
	f.Add(uint8(3), "AAAA", "1700000000000", []byte("[]"), "s", "${method}${url}${body}${timestamp}")
	f.Add(uint8(4), ",,=,", "-1", []byte{0xff, 0}, "", "${")
	f.Add(uint8(5), "t=,v1", "99999999999999999999", []byte("${body}"), "k", "${x}")
	now := time.Unix(1700000000, 0)
	f.Fuzz(func(t *testing.T, which uint8, header, ts string, body []byte, secret, tmpl string) {
		sigs := []*integrations.WebhookSignature{
			{Header: "X-Sig", Algorithm: "HMAC-SHA256", Encoding: "hex", Prefix: "sha256="},
			{Header: "X-Sig", Algorithm: "HMAC-SHA256", Encoding: "hex", Format: "key_value", SignatureKey: "v1", TimestampKey: "t", SignedPayload: tmpl, MaxAge: 300},
			{Header: "X-Sig", Algorithm: "HMAC-SHA256", Encoding: "hex", Prefix: "v0=", TimestampHeader: "X-Ts", SignedPayload: tmpl, MaxAge: 300},
			{Header: "X-Sig", Algorithm: "HMAC-SHA256", Encoding: "base64", TimestampHeader: "X-Ts", TimestampUnit: "milliseconds", SignedPayload: tmpl, MaxAge: 300},
			{Header: "X-Sig", Algorithm: "HMAC-SHA1", Encoding: "base64", SignedPayload: tmpl},
			{Header: "X-Sig", Algorithm: "HMAC-SHA256", Encoding: "hex", Format: "key_value", SignatureKey: "v1", TimestampHeader: "X-Ts", SignedPayload: tmpl},
		}
		sig := sigs[int(which)%len(sigs)]
		h := http.Header{"X-Sig": {header}, "X-Ts": {ts}}
		req := webhooks.SignedRequest{Method: "POST", URL: "https://h.test/webhook/dev/x?a=%3A", Header: h, Body: body}
		if err := webhooks.VerifyProviderSignature(sig, secret, req, now); err != nil && webhooks.SignatureReason(err) == "" {
			t.Fatalf("error is not a SignatureError: %v", err)
		}

		// Sign properly and expect acceptance, when the data is usable.
		if secret == "" || strings.Contains(tmpl, "${") {
			return
		}
		goodTS := "1700000000"
		if sig.TimestampUnit == "milliseconds" {
			goodTS = "1700000000000"
		}
		msg := tmpl // a template without placeholders signs its literal text
		if sig.SignedPayload == "" {
			msg = string(body)
		}
		var digest []byte
		if sig.Algorithm == "HMAC-SHA1" {
			digest = mac(sha1.New, secret, msg)
		} else {
			digest = mac(sha256.New, secret, msg)
		}
		enc := hex.EncodeToString(digest)
		if sig.Encoding == "base64" {
			enc = base64.StdEncoding.EncodeToString(digest)
		}
		v := sig.Prefix + enc
		if sig.Format == "key_value" {
			v = "t=" + goodTS + ",v1=" + enc
		}
		h = http.Header{"X-Sig": {v}, "X-Ts": {goodTS}}
		req.Header = h
		if err := webhooks.VerifyProviderSignature(sig, secret, req, now); err != nil {
			t.Fatalf("properly signed request refused (data %d, payload %q): %v", which%uint8(len(sigs)), msg, err)
		}
	})
}
