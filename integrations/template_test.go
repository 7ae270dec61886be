package integrations

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testNow is a Monday: 2024-01-15 10:30:05.123 UTC.
var testNow = time.Date(2024, 1, 15, 10, 30, 5, 123e6, time.UTC)

func testVars() *TemplateVars {
	return &TemplateVars{
		ConnectionConfig: map[string]string{"subdomain": "acme", "region": "", "installation.uuid": "flat-id"},
		Credentials:      map[string]string{"username": "user", "password": "pw", "appId": "app", "secretKey": "sk", "privateKey.id": "kid-1"},
		APIKey:           "key",
		AccessToken:      "tok",
		ClientID:         "cid",
		ClientSecret:     "csec",
		Raw:              map[string]any{"accountID": "acc-9", "n": float64(42), "nested": map[string]any{"b": "deep"}, "t": true},
		Extra: map[string]any{"refresh_token": "rt", "step1": map[string]any{"access_token": "s1"},
			"assertionOption": map[string]any{"userName": "u1"}},
		Request: &TemplateRequest{Method: "POST", URL: mustURL("https://api.acme.example:8443/v1/items?b=2&a=x%20y"),
			Endpoint: "/items", Body: []byte(`{"z":1,"a":"b c"}`), ContentType: "application/json"},
		Now:    func() time.Time { return testNow },
		Random: func() string { return "rnd" },
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

func sha256hex(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
func sha256b64(s string) string {
	h := sha256.Sum256([]byte(s))
	return base64.StdEncoding.EncodeToString(h[:])
}
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
func hmacSHA1Hex(msg, key string) string {
	m := hmac.New(sha1.New, []byte(key))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

func TestTemplateEval(t *testing.T) {
	t.Parallel()
	body := `{"z":1,"a":"b c"}`
	tests := []struct {
		tmpl string
		want string
	}{
		{"plain || other", "plain"},
		{"https://${connectionConfig.subdomain}.x.com", "https://acme.x.com"},
		{"${connectionConfig.installation.uuid}", "flat-id"},
		{"${credentials.privateKey.id}", "kid-1"},
		{"${credentials.raw.accountID}/${credentials.raw.n}/${credentials.raw.nested.b}", "acc-9/42/deep"},
		{"${credentials.raw.t} || no bool", "no bool"},
		{"${refresh_token} ${step1.access_token} ${assertionOption.userName}", "rt s1 u1"},
		{"${apiKey}:${accessToken}:${clientId}:${clientSecret}", "key:tok:cid:csec"},
		{"${connectionConfig.region} || ${credentials.raw.accountID}", "acc-9"},
		{"${connectionConfig.region || credentials.username}", "user"},
		{"${ connectionConfig.region || connectionConfig.nope || apiKey }", "key"},
		// The clock, in UTC, in the formats of Nango's file.
		{"${now}", "2024-01-15T10:30:05.123Z"},
		{"${now:YYYY-MM-DD}", "2024-01-15"},
		{"${now:YYYY-MM-DDTHH:mm:ss}", "2024-01-15T10:30:05"},
		{"${now:YYYYMMDDTHHmmss[Z]}", "20240115T103005Z"},
		{"${now:X}", "1705314605"},
		{"${now:x}", "1705314605123"},
		{"${now:ddd, DD MMM YYYY HH:mm:ss ZZ}", "Mon, 15 Jan 2024 10:30:05 +0000"},
		{"${now:dddd D MMMM YY h:m:s A a Z SSS}", "Monday 15 January 24 10:30:5 AM am +00:00 123"},
		{"${now+1:minutes:X}", "1705314665"},
		{"${now+7:days:YYYY-MM-DD}", "2024-01-22"},
		{"${now-1:months:YYYY-MM}", "2023-12"},
		{"${now+2:h}", "2024-01-15T12:30:05.123Z"},
		{"${random}-${random}", "rnd-rnd"},
		// Request values.
		{"${method} ${host} ${path} ${endpoint} ${contentType}", "POST api.acme.example:8443 /v1/items /items application/json"},
		{"${bodyCanonicalParams}", body},
		{"${params}", "a=b%20c&z=1"},
		{"${urlCanonicalParams}", "a=x%20y&b=2"},
		// Functions, nested, with literal text and commas inside ${...}.
		{"Basic ${base64(${credentials.username}:${credentials.password})}", "Basic " + b64("user:pw")},
		{"${base64(${apiKey}:)}", b64("key:")},
		{"${sha256Hex(hello)}", sha256hex("hello")},
		{"${sha256Base64(${bodyCanonicalParams})}", sha256b64(body)},
		{"${sha256Hex(${base64(${random}${credentials.appId}${now:YYYY-MM-DDTHH:mm:ss}${endpoint}${credentials.secretKey})})}",
			sha256hex(b64("rndapp2024-01-15T10:30:05/itemssk"))},
		{"${hmacSha1Hex(${now:ddd, DD MMM YYYY HH:mm:ss ZZ}\n${method}\n${host}\n${path}\n${params}, ${credentials.password})}",
			hmacSHA1Hex("Mon, 15 Jan 2024 10:30:05 +0000\nPOST\napi.acme.example:8443\n/v1/items\na=b%20c&z=1", "pw")},
		{"Basic ${base64(${credentials.username}:${hmacSha1Hex(a (b, c) d, ${credentials.password})})}",
			"Basic " + b64("user:"+hmacSHA1Hex("a (b, c) d", "pw"))},
		{"${hmacSha1Hex( spaced ,  key )}", hmacSHA1Hex("spaced", "key")},
		{"costs $5 {each} ${apiKey}", "costs $5 {each} key"},
	}
	for _, tt := range tests {
		t.Run(tt.tmpl, func(t *testing.T) {
			t.Parallel()
			tp, err := ParseTemplate(tt.tmpl)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tp.Eval(testVars())
			if err != nil || got != tt.want {
				t.Errorf("Eval = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestTemplateCanonicalParams(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method, ctype, body, query, want string
	}{
		{"GET", "", "", "", ""},
		{"GET", "", "", "b=2&a=1&c", "a=1&b=2&c="},
		{"GET", "", "ignored=1", "x=%2F~!", "x=%2F~%21"},
		{"POST", "application/x-www-form-urlencoded", "b=2&a=1+2", "q=1", "a=1%202&b=2"},
		{"POST", "", "", "q=1", ""},
		{"PATCH", "application/json", `{"b":true,"a":null,"c":{"d":1}}`, "", "a=null&b=true&c=%7B%22d%22%3A1%7D"},
	} {
		if got := canonicalParams(tc.method, []byte(tc.body), tc.ctype, tc.query); got != tc.want {
			t.Errorf("canonicalParams(%s, %q, %q) = %q; want %q", tc.method, tc.body, tc.query, got, tc.want)
		}
	}
}

func TestTemplateMissing(t *testing.T) {
	t.Parallel()
	v := testVars()
	for _, tc := range []struct {
		tmpl string
		vars *TemplateVars
		want []string
	}{
		{"${connectionConfig.region}", v, []string{"connectionConfig.region"}},
		{"${base64(${connectionConfig.nope}:${credentials.nope})}", v, []string{"connectionConfig.nope", "credentials.nope"}},
		{"${connectionConfig.a || connectionConfig.b}", v, []string{"connectionConfig.a", "connectionConfig.b"}},
		{"${connectionConfig.a} || ${sha256Hex(${credentials.raw.missing.path})}", v, []string{"connectionConfig.a", "credentials.raw.missing.path"}},
		{"${method}${params}", &TemplateVars{}, []string{"method", "params"}},
		{"${token}", v, []string{"token"}},
	} {
		tp, err := ParseTemplate(tc.tmpl)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tp.Eval(tc.vars)
		var mv *MissingValueError
		if !errors.As(err, &mv) {
			t.Errorf("Eval(%q) = %q, %v; want a *MissingValueError", tc.tmpl, got, err)
			continue
		}
		if diff := cmp.Diff(tc.want, mv.Names); diff != "" {
			t.Errorf("Eval(%q) missing (-want +got):\n%s", tc.tmpl, diff)
		}
	}
}

func TestParseTemplateErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tmpl, problem string
		pos           int
	}{
		{"a ${apiKey", `unterminated "${"`, 2},
		{"${}", `empty placeholder "${}"`, 0},
		{"x${ }", `empty placeholder "${}"`, 1},
		{"${nope}", `unknown variable "nope"`, 2},
		{"${connectionConfig.}", `bad placeholder "connectionConfig."`, 2},
		{"${credentials..x}", "bad placeholder", 2},
		{"${md5(x)}", `unknown function "md5"`, 2},
		{"${base64(a, b)}", "base64 takes 1 argument, not 2", 2},
		{"${base64()}", "base64 takes 1 argument, not 0", 2},
		{"${awsSigV4(a, b, c)}", "awsSigV4 takes 4 or 5 arguments, not 3", 2},
		{"${base64(a}", `unterminated call of base64: missing ")"`, 2},
		{"${base64(a) x}", `unexpected 'x'`, 12},
		{"${now+1}", "needs a unit", 7},
		{"${now+x:days}", "need a number", 6},
		{"${now+1:fortnights}", `unknown time unit "fortnights"`, 8},
		{"${now:}", "empty date format", 6},
		{"${now:YYYY${apiKey}}", `cannot hold "${"`, 10},
		{"${apiKey extra}", `unexpected 'e'`, 9},
		{strings.Repeat("${base64(", MaxTemplateDepth+1) + "x" + strings.Repeat(")}", MaxTemplateDepth+1), "nested deeper than", 9 * MaxTemplateDepth},
		{strings.Repeat("a", MaxTemplateLen+1), "longer than", MaxTemplateLen},
	} {
		_, err := ParseTemplate(tc.tmpl)
		var te *TemplateError
		if !errors.As(err, &te) || !strings.Contains(te.Problem, tc.problem) || te.Pos != tc.pos {
			t.Errorf("ParseTemplate(%.40q) = %v; want %q at byte %d", tc.tmpl, err, tc.problem, tc.pos)
		}
	}
}

func TestTemplateNamesAndPerRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tmpl       string
		names      []string
		perRequest bool
	}{
		{"https://${connectionConfig.a}.x/${apiKey} || ${connectionConfig.a} ${credentials.u}", []string{"connectionConfig.a", "apiKey", "credentials.u"}, false},
		{"Basic ${base64(${credentials.username}:${credentials.password})}", []string{"credentials.username", "credentials.password"}, false},
		{"${now:X}", nil, true},
		{"${random}", nil, true},
		{"${sha256Hex(${method}${path}${credentials.secret})}", []string{"method", "path", "credentials.secret"}, true},
		{"${awsSigV4(a, b, c, d)}", nil, true},
		{"${credentials.raw.id_token} || ${connectionConfig.id_token}", []string{"credentials.raw.id_token", "connectionConfig.id_token"}, false},
		{"${connectionConfig.a || step2.token_endpoint}", []string{"connectionConfig.a", "step2.token_endpoint"}, false},
	} {
		tp, err := ParseTemplate(tc.tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.names, tp.Names()); diff != "" {
			t.Errorf("Names(%q) (-want +got):\n%s", tc.tmpl, diff)
		}
		if tp.PerRequest() != tc.perRequest {
			t.Errorf("PerRequest(%q) = %v", tc.tmpl, tp.PerRequest())
		}
	}
}

// TestTemplateStable checks that the templates of one request agree on
// ${now} and ${random}, and that two requests do not share them.
func TestTemplateStable(t *testing.T) {
	t.Parallel()
	id, _ := ParseTemplate("${random}")
	sig, _ := ParseTemplate("${sha256Hex(${random}${now})}")
	base := TemplateVars{}
	var first string
	for i := range 2 {
		v := base.Stable()
		a, err1 := id.Eval(&v)
		b, err2 := sig.Eval(&v)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		now, _ := ParseTemplate("${now}")
		n, _ := now.Eval(&v)
		if b != sha256hex(a+n) {
			t.Errorf("the signature does not cover the request's own random and time")
		}
		if len(a) != 36 || a[14] != '4' || strings.Count(a, "-") != 4 {
			t.Errorf("${random} = %q; want a version 4 UUID", a)
		}
		if i == 1 && a == first {
			t.Errorf("two requests share ${random} %q", a)
		}
		first = a
	}
}

func ed25519PEM(t *testing.T) (string, ed25519.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), pub
}

// TestEd25519Sign computes an RFC 9421 signature the way Streamline's
// entry in Nango's file does, and verifies it over the message rebuilt in
// the test.
func TestEd25519Sign(t *testing.T) {
	t.Parallel()
	key, pub := ed25519PEM(t)
	v := testVars()
	v.Credentials = map[string]string{"username": "kid", "password": key}
	digest := "${sha256Base64(${bodyCanonicalParams})}"
	sigTmpl := `${ed25519Sign("@method": ${method}` + "\n" + `"@target-uri": https://${host}${path}` + "\n" +
		`"content-digest": sha-256=:` + digest + `:` + "\n" +
		`"@signature-params": ("@method" "@target-uri" "content-digest");created=${now:X};expires=${now+1:minutes:X};keyid="${credentials.username}", ${credentials.password})}`
	tp, err := ParseTemplate(sigTmpl)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tp.Eval(v)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := base64.StdEncoding.DecodeString(got)
	if err != nil {
		t.Fatalf("the signature is not base64: %v", err)
	}
	msg := "\"@method\": POST\n\"@target-uri\": https://api.acme.example:8443/v1/items\n" +
		"\"content-digest\": sha-256=:" + sha256b64(string(v.Request.Body)) + ":\n" +
		"\"@signature-params\": (\"@method\" \"@target-uri\" \"content-digest\");created=1705314605;expires=1705314665;keyid=\"kid\""
	if !ed25519.Verify(pub, []byte(msg), sig) {
		t.Errorf("the signature does not verify over the request's message")
	}
	// A PEM pasted with its line breaks escaped is accepted.
	v.Credentials["password"] = strings.ReplaceAll(key, "\n", `\n`)
	if again, err := tp.Eval(v); err != nil || again != got {
		t.Errorf("with an escaped PEM: %q, %v", again, err)
	}
}

// TestFunctionErrorsHideValues checks that a failing function names
// itself, never the values (a key) it was given.
func TestFunctionErrorsHideValues(t *testing.T) {
	t.Parallel()
	rk, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	rsaPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)}))
	for _, key := range []string{"super-secret-not-a-key", rsaPEM} {
		v := testVars()
		v.Credentials["password"] = key
		tp, _ := ParseTemplate("${ed25519Sign(msg-secret ${credentials.username}, ${credentials.password})}")
		_, err := tp.Eval(v)
		var fe *FunctionError
		if !errors.As(err, &fe) || fe.Function != "ed25519Sign" {
			t.Fatalf("Eval = %v; want a *FunctionError of ed25519Sign", err)
		}
		if strings.Contains(err.Error(), "super-secret") || strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), "msg-secret user") {
			t.Errorf("the error shows a value: %v", err)
		}
	}
	// The missing-value error names placeholders only.
	v := testVars()
	tp, _ := ParseTemplate("${credentials.password}${connectionConfig.nope}")
	if _, err := tp.Eval(v); err == nil || strings.Contains(err.Error(), "pw") && !strings.Contains(err.Error(), "password") {
		t.Errorf("Eval = %v", err)
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	rk, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(rk)
	key := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	pub, _ := x509.MarshalPKIXPublicKey(&rk.PublicKey)
	sum := sha256.Sum256(pub)
	v := testVars()
	v.Credentials["privateKey"] = key
	tp, _ := ParseTemplate("ACC.USER.${fingerprint(${credentials.privateKey})}")
	got, err := tp.Eval(v)
	if want := "ACC.USER.SHA256:" + base64.StdEncoding.EncodeToString(sum[:]); err != nil || got != want {
		t.Errorf("Eval = %q, %v; want %q", got, err, want)
	}
}

// TestAWSSigV4 checks awsSigV4 against AWS's published example (GET
// iam.amazonaws.com ListUsers, signed 2015-08-30T12:36:00Z) and against a
// signature of a POST with a body computed here from the specification.
func TestAWSSigV4(t *testing.T) {
	t.Parallel()
	const access, secret = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	at := time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC)
	v := &TemplateVars{
		Credentials: map[string]string{"username": access, "password": secret},
		Request: &TemplateRequest{Method: "GET", URL: mustURL("https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08"),
			ContentType: "application/x-www-form-urlencoded; charset=utf-8"},
		Now: func() time.Time { return at },
	}
	tp, err := ParseTemplate("${awsSigV4(${credentials.username}, ${credentials.password}, us-east-1, iam)}")
	if err != nil {
		t.Fatal(err)
	}
	got, err := tp.Eval(v)
	want := "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, " +
		"SignedHeaders=content-type;host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
	if err != nil || got != want {
		t.Errorf("AWS example:\n got %q, %v\nwant %q", got, err, want)
	}
	date, _ := ParseTemplate("${now:YYYYMMDDTHHmmss[Z]}")
	if d, _ := date.Eval(v); d != "20150830T123600Z" {
		t.Errorf("x-amz-date = %q", d)
	}

	// A POST with a body and a path to escape.
	body := `{"Name":"a b"}`
	v.Request = &TemplateRequest{Method: "POST", URL: mustURL("https://inspector2.eu-west-1.amazonaws.com/findings/list%20x?b=2&a=1"),
		Body: []byte(body), ContentType: "application/json"}
	tp, _ = ParseTemplate("${awsSigV4(${credentials.username}, ${credentials.password}, eu-west-1, inspector2, inspector2.eu-west-1.amazonaws.com)}")
	got, err = tp.Eval(v)
	if err != nil {
		t.Fatal(err)
	}
	hm := func(k []byte, s string) []byte { m := hmac.New(sha256.New, k); m.Write([]byte(s)); return m.Sum(nil) }
	canonical := "POST\n/findings/list%2520x\na=1&b=2\n" +
		"content-length:" + itoa(len(body)) + "\ncontent-type:application/json\nhost:inspector2.eu-west-1.amazonaws.com\nx-amz-date:20150830T123600Z\n\n" +
		"content-length;content-type;host;x-amz-date\n" + sha256hex(body)
	sts := "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/eu-west-1/inspector2/aws4_request\n" + sha256hex(canonical)
	k := hm(hm(hm(hm([]byte("AWS4"+secret), "20150830"), "eu-west-1"), "inspector2"), "aws4_request")
	want = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/eu-west-1/inspector2/aws4_request, " +
		"SignedHeaders=content-length;content-type;host;x-amz-date, Signature=" + hex.EncodeToString(hm(k, sts))
	if got != want {
		t.Errorf("POST:\n got %q\nwant %q", got, want)
	}
	// Without a request: a GET of / on the host given, or service.amazonaws.com.
	v.Request = nil
	tp, _ = ParseTemplate("${awsSigV4(${credentials.username}, ${credentials.password}, us-east-1, iam)}")
	if got, err := tp.Eval(v); err != nil || !strings.Contains(got, "Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, SignedHeaders=host;x-amz-date,") {
		t.Errorf("without a request: %q, %v", got, err)
	}
}

// FuzzParseTemplate checks that parsing never panics, that what parses
// evaluates without panicking (with values that are themselves template
// text), and that a failing evaluation says why.
func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{
		"", "plain", "${apiKey}", "https://${connectionConfig.subdomain}.x.com || https://x.com", "${", "}${}",
		"${base64(${credentials.username}:${credentials.password})}", "${now:ddd, DD MMM YYYY HH:mm:ss ZZ}",
		"${now+1:minutes:X}", "${hmacSha1Hex(${now:X}\n${method}\n${params}, ${credentials.password})}",
		"${ed25519Sign(a (b) c, ${credentials.password})}", "${awsSigV4(a, b, c, d, e)}", "${a || b}",
		"${connectionConfig.a || credentials.raw.x.y}", "${sha256Hex(${base64(${random}${endpoint})})}",
		"${fingerprint(${credentials.privateKey})}", "$${apiKey}}", "\xff${apiKey\x00}", "${now-3:y:[Z]YY}",
	} {
		f.Add(s, "v")
	}
	f.Fuzz(func(t *testing.T, tmpl, value string) {
		tp, err := parseTemplate(tmpl) // not the cache: every input parsed
		if err != nil {
			var te *TemplateError
			if !errors.As(err, &te) || te.Pos < 0 || te.Pos > len(tmpl) {
				t.Fatalf("ParseTemplate(%q) = %v; want a *TemplateError within the template", tmpl, err)
			}
			return
		}
		if tp.String() != tmpl {
			t.Fatalf("String() = %q", tp.String())
		}
		vars := &TemplateVars{
			ConnectionConfig: map[string]string{"subdomain": value, "a": value},
			Credentials:      map[string]string{"username": value, "password": value, "privateKey": value},
			APIKey:           value,
			Raw:              map[string]any{"x": map[string]any{"y": value}},
			Request:          &TemplateRequest{Method: "POST", URL: mustURL("https://h.example/p?q=" + url.QueryEscape(value)), Body: []byte(value)},
			Now:              func() time.Time { return testNow },
		}
		_, err = tp.Eval(vars)
		var mv *MissingValueError
		var fe *FunctionError
		if err != nil && !errors.As(err, &fe) && !(errors.As(err, &mv) && len(mv.Names) > 0) {
			t.Fatalf("Eval(%q) = %v; want nil, a *FunctionError or a *MissingValueError with names", tmpl, err)
		}
		_, _ = tp.Eval(&TemplateVars{})
	})
}
