package connections

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

const testPEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n\tAQ8AMIIBCgKCAQEA\r\n-----END PRIVATE KEY-----\n"

func TestTextProblem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, v string
		ok      bool
	}{
		{"empty", "", true},
		{"token", "sk-abc_DEF.123~+/=", true},
		{"spaces and punctuation", `pass word "quoted" ; é ü 😀`, true},
		{"CRLF", "key\r\nX-Injected: 1", false},
		{"trailing line feed", "key\n", false},
		{"carriage return", "a\rb", false},
		{"tab", "a\tb", false},
		{"NUL", "a\x00b", false},
		{"escape", "a\x1bb", false},
		{"DEL", "a\x7fb", false},
		{"C1 next line", "a\u0085b", false},
		{"C1 first", "\u0080", false},
		{"invalid UTF-8", "caf\xe9", false},
		{"PEM key", testPEM, true},
		{"PEM with NUL", strings.Replace(testPEM, "AQ8A", "AQ\x008A", 1), false},
		{"PEM with escape", strings.Replace(testPEM, "AQ8A", "AQ\x1b8A", 1), false},
		{"PEM without END", "-----BEGIN PRIVATE KEY-----\nMIIE\n", false},
		{"JSON object (JWK)", "{\n\t\"kty\": \"RSA\",\r\n  \"n\": \"abc\"\n}", true},
		{"not JSON in braces", "{\nnot json\n}", false},
		{"JSON array", "[\n1\n]", false},
	} {
		if got := textProblem(tc.v) == ""; got != tc.ok {
			t.Errorf("%s: textProblem(%q) = %q, want ok %v", tc.name, tc.v, textProblem(tc.v), tc.ok)
		}
	}
}

// TestCredentialProblemCoversEveryField sets each string field of
// Credentials (and of what it holds: the AWS fields, the OAuth client
// override, the registered MCP client, the CUSTOM app and user
// credentials) to a value with a line feed, one at a time, and checks
// that credentialProblem names it by its JSON path: a field added later
// is checked, or this test fails.
func TestCredentialProblemCoversEveryField(t *testing.T) {
	t.Parallel()
	skipped := []string{"type"} // the auth mode, set by the service
	var walk func(tp reflect.Type, path []string, set func(c *Credentials) reflect.Value)
	n := 0
	walk = func(tp reflect.Type, path []string, get func(c *Credentials) reflect.Value) {
		for i := range tp.NumField() {
			f := tp.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			p := path
			if !f.Anonymous {
				p = append(slices.Clone(path), name)
			}
			field := func(c *Credentials) reflect.Value { return get(c).Field(i) }
			switch {
			case f.Type.Kind() == reflect.String:
				if len(p) == 1 && slices.Contains(skipped, p[0]) {
					continue
				}
				c := &Credentials{}
				field(c).SetString("line one\nline two")
				got, _ := credentialProblem(c)
				if !slices.Equal(got, p) {
					t.Errorf("credentials.%s with a line feed: problem at %v, want %v", strings.Join(p, "."), got, p)
				}
				n++
			case f.Type.Kind() == reflect.Struct && f.Anonymous:
				walk(f.Type, p, field)
			case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct &&
				f.Type.Elem().PkgPath() == tp.PkgPath() && f.Type.Elem() != reflect.TypeFor[Credentials]():
				elem := f.Type.Elem()
				walk(elem, p, func(c *Credentials) reflect.Value {
					v := field(c)
					if v.IsNil() {
						v.Set(reflect.New(elem))
					}
					return v.Elem()
				})
			}
		}
	}
	walk(reflect.TypeFor[Credentials](), nil, func(c *Credentials) reflect.Value { return reflect.ValueOf(c).Elem() })
	if n < 25 {
		t.Fatalf("only %d string fields checked", n)
	}
	for _, tc := range []struct {
		c    *Credentials
		want []string
	}{
		{&Credentials{Inputs: map[string]any{"email": "a@b.c", "password": "p\r\n"}}, []string{"inputs", "password"}},
		{&Credentials{Inputs: map[string]any{"assertionOption": map[string]any{"aud": []any{"ok", "x\ty"}}}}, []string{"inputs", "assertionOption", "aud", "1"}},
		{&Credentials{App: &Credentials{AccessToken: "a\nb"}}, []string{"app", "access_token"}},
		{&Credentials{User: &Credentials{RefreshToken: "a\x00b"}}, []string{"user", "refresh_token"}},
		{&Credentials{Inputs: map[string]any{"privateKey": testPEM, "n": 5.0}, ClientPrivateKey: testPEM, Password: testPEM}, nil},
		{&Credentials{Raw: map[string]any{"note": "line\nbreak"}, Scopes: []string{"a\tb"}}, nil}, // not checked
	} {
		if got, _ := credentialProblem(tc.c); !slices.Equal(got, tc.want) {
			t.Errorf("credentialProblem(%+v) at %v, want %v", tc.c, got, tc.want)
		}
	}
}

// TestTextDoorsNameTheField: each door names a refused credential as its
// caller sent it.
func TestTextDoorsNameTheField(t *testing.T) {
	t.Parallel()
	path := func(err error) string {
		fe := fieldErrors(err)
		if len(fe) != 1 {
			return "no field error: " + err.Error()
		}
		return strings.Join(fe[0].Path, ".")
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{checkTypedCredentials(&Credentials{APIKey: "k\r\n"}), "apiKey"},
		{checkTypedCredentials(&Credentials{Inputs: map[string]any{"privateKey": "k\x00"}}), "privateKey"},
		{checkTypedCredentials(&Credentials{TokenID: "t", ConfigOverride: &ConfigOverride{ClientSecret: "s\n"}}), "oauth_client_secret_override"},
		{checkImportedCredentials(&Credentials{APIKey: "k\n"}, false), "api_key"},
		{checkImportedCredentials(&Credentials{Token: "k\n"}, false), "access_token"},
		{checkImportedCredentials(&Credentials{ClientID: "i\t"}, false), "oauth_client_id_override"},
		{checkImportedCredentials(&Credentials{ConfigOverride: &ConfigOverride{ClientID: "i\t"}}, false), "oauth_client_id_override"},
		{checkImportedCredentials(&Credentials{RefreshToken: "r\n"}, false), "refresh_token"},
		{checkImportedCredentials(&Credentials{APIKey: "k\n"}, true), "credentials.apiKey"},
		{checkImportedCredentials(&Credentials{Inputs: map[string]any{"a": "\x1b"}}, true), "credentials.inputs.a"},
		{checkConfigText(map[string]any{"ok": "x", "subdomain": "a\r\nb", "n": 1.0}, "connection_config"), "connection_config.subdomain"},
	} {
		if tc.err == nil {
			t.Errorf("%s: accepted", tc.want)
			continue
		}
		if got := path(tc.err); got != tc.want {
			t.Errorf("error %v names %s, want %s", tc.err, got, tc.want)
		}
	}
	if err := checkConfigText(map[string]any{"key": testPEM, "n": 1.0, "o": map[string]any{"x": "a\nb"}}, "connection_config"); err != nil {
		t.Errorf("a PEM value and non-string values: %v", err)
	}
}
