package connections

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/httpapi"
)

func TestParseTokenResponse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		contentType string
		body        string
		want        *TokenResponse // Raw is checked separately when wantRaw is set
		wantRaw     map[string]any
		wantErr     bool
	}{
		{name: "json", contentType: "application/json",
			body: `{"access_token":"at","refresh_token":"rt","expires_in":3600,"token_type":"bearer","scope":"repo user"}`,
			want: &TokenResponse{AccessToken: "at", RefreshToken: "rt", ExpiresIn: time.Hour, TokenType: "bearer", Scope: "repo user"},
			wantRaw: map[string]any{"access_token": "at", "refresh_token": "rt", "expires_in": float64(3600),
				"token_type": "bearer", "scope": "repo user"}},
		{name: "json charset", contentType: "application/json; charset=utf-8", body: ` {"access_token":"at"} `,
			want: &TokenResponse{AccessToken: "at"}},
		{name: "json without content type", body: `{"access_token":"at","expires_in":"7200"}`,
			want: &TokenResponse{AccessToken: "at", ExpiresIn: 2 * time.Hour}},
		{name: "json as text/plain", contentType: "text/plain", body: `{"access_token":"at"}`,
			want: &TokenResponse{AccessToken: "at"}},
		{name: "expires_in numeric string with spaces", contentType: "application/json", body: `{"access_token":"at","expires_in":" 60 "}`,
			want: &TokenResponse{AccessToken: "at", ExpiresIn: time.Minute}},
		{name: "expires_in fractional", contentType: "application/json", body: `{"access_token":"at","expires_in":1.5}`,
			want: &TokenResponse{AccessToken: "at", ExpiresIn: 1500 * time.Millisecond}},
		{name: "expires_in garbage string", contentType: "application/json", body: `{"access_token":"at","expires_in":"soon"}`,
			want: &TokenResponse{AccessToken: "at"}},
		{name: "expires_in negative", contentType: "application/json", body: `{"access_token":"at","expires_in":-5}`,
			want: &TokenResponse{AccessToken: "at"}},
		{name: "expires_in zero", contentType: "application/json", body: `{"access_token":"at","expires_in":0}`,
			want: &TokenResponse{AccessToken: "at"}},
		{name: "expires_in huge", contentType: "application/json", body: `{"access_token":"at","expires_in":1e300}`,
			want: &TokenResponse{AccessToken: "at"}},
		{name: "expires_in NaN string", contentType: "application/json", body: `{"access_token":"at","expires_in":"NaN"}`,
			want: &TokenResponse{AccessToken: "at"}},
		{name: "expires_in object", contentType: "application/json", body: `{"access_token":"at","expires_in":{"s":1}}`,
			want: &TokenResponse{AccessToken: "at"}},
		{name: "missing fields", contentType: "application/json", body: `{}`,
			want: &TokenResponse{}, wantRaw: map[string]any{}},
		{name: "non-string tokens", contentType: "application/json", body: `{"access_token":12,"refresh_token":null}`,
			want: &TokenResponse{}},
		{name: "scope array", contentType: "application/json", body: `{"access_token":"at","scope":["a","b",3]}`,
			want: &TokenResponse{AccessToken: "at", Scope: "a b"}},
		{name: "oauth error", contentType: "application/json", body: `{"error":"invalid_grant","error_description":"Bad refresh token"}`,
			want: &TokenResponse{Error: "invalid_grant", ErrorDescription: "Bad refresh token"}},
		{name: "nested error", contentType: "application/json", body: `{"error":{"code":"expired","message":"gone"}}`,
			want: &TokenResponse{Error: "expired", ErrorDescription: "gone"}},
		{name: "slack ok false", contentType: "application/json", body: `{"ok":false,"error":"invalid_refresh_token"}`,
			want: &TokenResponse{Error: "invalid_refresh_token"}},
		{name: "ok false without error", contentType: "application/json", body: `{"ok":false}`,
			want: &TokenResponse{Error: "error"}},
		{name: "form (GitHub)", contentType: "application/x-www-form-urlencoded; charset=utf-8",
			body: "access_token=gho_x&expires_in=28800&refresh_token=ghr_y&refresh_token_expires_in=15897600&scope=repo%2Cuser&token_type=bearer",
			want: &TokenResponse{AccessToken: "gho_x", RefreshToken: "ghr_y", ExpiresIn: 8 * time.Hour, TokenType: "bearer", Scope: "repo,user"},
			wantRaw: map[string]any{"access_token": "gho_x", "expires_in": "28800", "refresh_token": "ghr_y",
				"refresh_token_expires_in": "15897600", "scope": "repo,user", "token_type": "bearer"}},
		{name: "form error", contentType: "application/x-www-form-urlencoded",
			body: "error=bad_refresh_token&error_description=The+refresh+token+passed+is+incorrect+or+expired.",
			want: &TokenResponse{Error: "bad_refresh_token", ErrorDescription: "The refresh token passed is incorrect or expired."}},
		{name: "form repeated key keeps the first", contentType: "application/x-www-form-urlencoded", body: "access_token=a&access_token=b",
			want: &TokenResponse{AccessToken: "a"}},
		{name: "form without content type", body: "access_token=a", want: &TokenResponse{AccessToken: "a"}},

		{name: "empty", contentType: "application/json", body: "", wantErr: true},
		{name: "blank", body: "  \n ", wantErr: true},
		{name: "json null", contentType: "application/json", body: "null", wantErr: true},
		{name: "json array", contentType: "application/json", body: `[{"access_token":"at"}]`, wantErr: true},
		{name: "json string", contentType: "application/json", body: `"at"`, wantErr: true},
		{name: "json truncated", contentType: "application/json", body: `{"access_token":"at"`, wantErr: true},
		{name: "json trailing data", contentType: "application/json", body: `{"access_token":"at"}{"x":1}`, wantErr: true},
		{name: "json huge number", contentType: "application/json", body: `{"access_token":"at","n":1e400}`, wantErr: true},
		{name: "html page", contentType: "text/html", body: "<html><body>Bad Gateway</body></html>", wantErr: true},
		{name: "html without content type", body: "<html>oops</html>", wantErr: true},
		{name: "plain words", contentType: "text/plain", body: "Service Unavailable", wantErr: true},
		{name: "bad form escape", contentType: "application/x-www-form-urlencoded", body: "access_token=%zz", wantErr: true},
		{name: "invalid utf-8 form", contentType: "application/x-www-form-urlencoded", body: "access_token=\xff", wantErr: true},
		{name: "binary", contentType: "application/octet-stream", body: "\x00\x01access_token=a", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseTokenResponse(tc.contentType, []byte(tc.body))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParseTokenResponse(%q) = %+v, want an error", tc.body, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseTokenResponse(%q): %v", tc.body, err)
			}
			raw := got.Raw
			got.Raw = nil
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if raw == nil {
				t.Error("Raw is nil")
			}
			if tc.wantRaw != nil {
				if d := cmp.Diff(tc.wantRaw, raw); d != "" {
					t.Errorf("Raw (-want +got):\n%s", d)
				}
			}
		})
	}
}

// TestParseTokenResponseLarge parses a large but legal response and a deep
// one without trouble.
func TestParseTokenResponseLarge(t *testing.T) {
	t.Parallel()
	big := `{"access_token":"` + strings.Repeat("a", MaxTokenResponseSize-100) + `"}`
	tr, err := ParseTokenResponse("application/json", []byte(big))
	if err != nil || len(tr.AccessToken) != MaxTokenResponseSize-100 {
		t.Fatalf("large response: %v", err)
	}
	deep := `{"access_token":"at","x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`
	if tr, err := ParseTokenResponse("application/json", []byte(deep)); err != nil || tr.AccessToken != "at" {
		t.Fatalf("deep response: %+v, %v", tr, err)
	}
	tooDeep := `{"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`
	if _, err := ParseTokenResponse("application/json", []byte(tooDeep)); err == nil {
		t.Fatal("a response nested beyond encoding/json's limit parsed")
	}
}

// FuzzParseTokenResponse checks that the parser never panics, and that
// what it accepts is consistent: Raw holds the fields it extracted.
func FuzzParseTokenResponse(f *testing.F) {
	for _, s := range []struct{ ct, body string }{
		{"application/json", `{"access_token":"at","refresh_token":"rt","expires_in":3600,"scope":["a"]}`},
		{"application/json", `{"access_token":"at","expires_in":"3600"}`},
		{"application/json", `{"error":"invalid_grant","error_description":"x"}`},
		{"application/json", `{"error":{"code":"c","message":"m"},"ok":false}`},
		{"application/x-www-form-urlencoded", "access_token=a&refresh_token=b&expires_in=10"},
		{"text/plain", "error=bad"},
		{"text/html", "<html></html>"},
		{"", "null"},
		{"application/json", `{"expires_in":1e308}`},
		{"application/json; charset=\"", `{}`},
	} {
		f.Add(s.ct, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		tr, err := ParseTokenResponse(ct, body)
		if err != nil {
			if tr != nil {
				t.Fatalf("error %v with a response %+v", err, tr)
			}
			return
		}
		if tr.Raw == nil {
			t.Fatal("nil Raw without an error")
		}
		if tr.AccessToken != "" && tr.Raw["access_token"] != tr.AccessToken {
			t.Fatalf("AccessToken %q is not Raw's %v", tr.AccessToken, tr.Raw["access_token"])
		}
		if tr.RefreshToken != "" && tr.Raw["refresh_token"] != tr.RefreshToken {
			t.Fatalf("RefreshToken %q is not Raw's %v", tr.RefreshToken, tr.Raw["refresh_token"])
		}
		if tr.ExpiresIn < 0 || tr.ExpiresIn > maxExpiresIn {
			t.Fatalf("ExpiresIn %v out of range", tr.ExpiresIn)
		}
		if _, err := json.Marshal(tr.Raw); err != nil {
			t.Fatalf("Raw does not marshal: %v", err)
		}
	})
}

func TestMergeTokens(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	old := &Credentials{Type: integrations.AuthModeOAuth2, AccessToken: "old-at", RefreshToken: "old-rt",
		ExpiresAt: ptr(now.Add(time.Minute)), Scopes: []string{"a"}, ConfigOverride: &ConfigOverride{ClientID: "o"},
		Raw: map[string]any{"access_token": "old-at", "refresh_token": "old-rt", "extra": "x"}}

	// Without a refresh token the old one stays, in Raw too.
	got := mergeTokens(old, &TokenResponse{AccessToken: "new-at", ExpiresIn: time.Hour,
		Raw: map[string]any{"access_token": "new-at", "expires_in": float64(3600)}}, GrantRefreshToken, now)
	// ObtainedAt records when the token arrived (its lifetime decides its
	// next refresh).
	want := &Credentials{Type: integrations.AuthModeOAuth2, AccessToken: "new-at", RefreshToken: "old-rt", ExpiresAt: ptr(now.Add(time.Hour)),
		ObtainedAt: ptr(now), Scopes: []string{"a"}, ConfigOverride: &ConfigOverride{ClientID: "o"},
		Raw: map[string]any{"access_token": "new-at", "expires_in": float64(3600), "refresh_token": "old-rt"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("kept refresh token (-want +got):\n%s", d)
	}
	if old.AccessToken != "old-at" || old.Raw["access_token"] != "old-at" {
		t.Error("mergeTokens changed the old credentials")
	}

	// A rotated refresh token replaces the old one; no expires_in means no
	// expiry; scopes are replaced when sent.
	got = mergeTokens(old, &TokenResponse{AccessToken: "at2", RefreshToken: "rt2", Scope: "x,y z",
		Raw: map[string]any{"access_token": "at2", "refresh_token": "rt2"}}, GrantRefreshToken, now)
	if got.RefreshToken != "rt2" || got.ExpiresAt != nil || !cmp.Equal(got.Scopes, []string{"x", "y", "z"}) {
		t.Errorf("rotated: %+v", got)
	}

	// Client credentials: the token goes to Token, 55 minutes by default.
	cc := &Credentials{Type: integrations.AuthModeOAuth2CC, ClientID: "id", ClientSecret: "secret", Token: "old"}
	got = mergeTokens(cc, &TokenResponse{AccessToken: "cc-token", Raw: map[string]any{"access_token": "cc-token"}}, GrantClientCredentials, now)
	if got.Token != "cc-token" || got.AccessToken != "" || got.ExpiresAt == nil || !got.ExpiresAt.Equal(now.Add(55*time.Minute)) ||
		got.ClientID != "id" || got.ClientSecret != "secret" {
		t.Errorf("client credentials: %+v", got)
	}
}

func TestGrantFor(t *testing.T) {
	t.Parallel()
	oauth := &integrations.Provider{AuthMode: integrations.AuthModeOAuth2}
	ccOAuth := &integrations.Provider{AuthMode: integrations.AuthModeOAuth2, TokenParams: map[string]string{"grant_type": "client_credentials"}}
	cc := &integrations.Provider{AuthMode: integrations.AuthModeOAuth2CC}
	for _, tc := range []struct {
		p     *integrations.Provider
		creds *Credentials
		want  string
	}{
		{oauth, &Credentials{Type: integrations.AuthModeOAuth2, RefreshToken: "r"}, GrantRefreshToken},
		{oauth, &Credentials{Type: integrations.AuthModeOAuth2}, ""},
		{ccOAuth, &Credentials{Type: integrations.AuthModeOAuth2}, GrantClientCredentials},
		{cc, &Credentials{Type: integrations.AuthModeOAuth2CC}, GrantClientCredentials},
		{oauth, &Credentials{Type: integrations.AuthModeAPIKey}, ""},
		{&integrations.Provider{AuthMode: integrations.AuthModeApp}, &Credentials{Type: integrations.AuthModeApp}, GrantAppInstallation},
		{oauth, nil, ""},
	} {
		if got := grantFor(tc.p, tc.creds); got != tc.want {
			t.Errorf("grantFor(%s, %+v) = %q, want %q", tc.p.AuthMode, tc.creds, got, tc.want)
		}
	}
}

func TestSanitize(t *testing.T) {
	t.Parallel()
	got := sanitize("token rt-secret-123 is bad\x00\n and csecret too "+strings.Repeat("x", 400), 60, []string{"rt-secret-123", "csecret", "", "ab"})
	if strings.Contains(got, "rt-secret-123") || strings.Contains(got, "csecret") || strings.ContainsAny(got, "\x00\n") {
		t.Errorf("sanitize left a secret or a control character: %q", got)
	}
	if n := len([]rune(got)); n > 61 {
		t.Errorf("sanitize kept %d characters, want at most 61", n)
	}
}

func TestRefreshErrors(t *testing.T) {
	t.Parallel()
	r := &refresher{cfg: RefreshConfig{Backoff: 30 * time.Second}}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	failedAt := now.Add(-10 * time.Second)
	c := &Connection{LastRefreshFailure: &failedAt, Errors: []Error{{Type: "sync", LogID: "s"}, {Type: "auth", LogID: "log-1"}}}
	re := &RefreshError{Status: 400, Code: "invalid_grant", Description: "expired"}
	for _, tc := range []struct {
		err    error
		kind   error
		code   string
		status int
	}{
		{r.failedError(c, re), ErrRefreshFailed, CodeRefreshFailed, http.StatusBadRequest},
		{r.backoffError(c, failedAt.Add(30*time.Second), now), ErrRefreshBackoff, CodeRefreshBackoff, http.StatusBadRequest},
	} {
		if !errors.Is(tc.err, tc.kind) {
			t.Errorf("%v does not match %v", tc.err, tc.kind)
		}
		status, d := httpapi.Resolve(tc.err)
		if status != tc.status || d.Code != tc.code {
			t.Errorf("%v resolves to %d %s, want %d %s", tc.err, status, d.Code, tc.status, tc.code)
		}
		if p, _ := d.Payload.(map[string]any); p["log_id"] != "log-1" {
			t.Errorf("payload %v lacks log_id log-1", d.Payload)
		}
	}
	var got *RefreshError
	if err := r.failedError(c, re); !errors.As(err, &got) || got.Code != "invalid_grant" || got.Status != 400 {
		t.Errorf("errors.As found %+v", got)
	}
	_, d := httpapi.Resolve(r.backoffError(c, failedAt.Add(30*time.Second), now))
	if p := d.Payload.(map[string]any); p["retry_after"] != 20 {
		t.Errorf("retry_after = %v, want 20", p["retry_after"])
	}
}

func TestCloneConnection(t *testing.T) {
	t.Parallel()
	exp := time.Now()
	c := &Connection{ConnectionConfig: map[string]any{"a": map[string]any{"b": []any{1.0}}}, Metadata: map[string]any{"m": 1.0},
		Tags: map[string]string{"t": "v"}, Errors: []Error{{Type: "auth"}}, CredentialsExpiresAt: &exp,
		Credentials: &Credentials{Raw: map[string]any{"x": []any{"y"}}, Scopes: []string{"s"}, ConfigOverride: &ConfigOverride{ClientID: "c"}, ExpiresAt: &exp}}
	cp := cloneConnection(c)
	if d := cmp.Diff(c, cp); d != "" {
		t.Fatalf("clone differs:\n%s", d)
	}
	cp.ConnectionConfig["a"].(map[string]any)["b"].([]any)[0] = 2.0
	cp.Metadata["m"] = 2.0
	cp.Tags["t"] = "w"
	cp.Errors[0].Type = "x"
	*cp.CredentialsExpiresAt = exp.Add(time.Hour)
	cp.Credentials.Raw["x"].([]any)[0] = "z"
	cp.Credentials.Scopes[0] = "z"
	cp.Credentials.ConfigOverride.ClientID = "z"
	*cp.Credentials.ExpiresAt = exp.Add(time.Hour)
	if c.ConnectionConfig["a"].(map[string]any)["b"].([]any)[0] != 1.0 || c.Metadata["m"] != 1.0 || c.Tags["t"] != "v" ||
		c.Errors[0].Type != "auth" || !c.CredentialsExpiresAt.Equal(exp) || c.Credentials.Raw["x"].([]any)[0] != "y" ||
		c.Credentials.Scopes[0] != "s" || c.Credentials.ConfigOverride.ClientID != "c" || !c.Credentials.ExpiresAt.Equal(exp) {
		t.Error("changing the clone changed the original")
	}
}
