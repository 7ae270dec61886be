package connections

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store"
)

func TestNormalizeTags(t *testing.T) {
	t.Parallel()
	got, err := NormalizeTags(map[string]string{"End_User_ID": "u1", " Plan ": "Pro"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"end_user_id": "u1", "plan": "Pro"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// 255 characters (not bytes) is the limit.
	if _, err := NormalizeTags(map[string]string{"k": strings.Repeat("é", 255)}); err != nil {
		t.Errorf("255 characters refused: %v", err)
	}
	many := map[string]string{}
	for i := range MaxTags + 1 {
		many[strings.Repeat("k", i+1)] = "v"
	}
	for name, in := range map[string]map[string]string{
		"long value": {"k": strings.Repeat("v", 256)},
		"empty key":  {"": "v"},
		"long key":   {strings.Repeat("k", 65): "v"},
		"too many":   many,
		"bad utf8":   {"k": "\xff"},
	} {
		if _, err := NormalizeTags(in); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestDateTime(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Time{
		`"2030-01-02T03:04:05Z"`:      time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC),
		`"2030-01-02T04:04:05+01:00"`: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC),
		`"2030-01-02"`:                time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC),
	} {
		var d DateTime
		if err := json.Unmarshal([]byte(in), &d); err != nil || !d.Equal(want) {
			t.Errorf("%s = %v, %v", in, d.Time, err)
		}
	}
	for _, in := range []string{`"soon"`, `5`, `"2030-13-01"`, `true`} {
		var d DateTime
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("%s accepted", in)
		}
	}
}

func TestImportCredentialsRules(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := func(v string) *string { return &v }
	n := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name string
		mode string
		in   ImportInput
		want *Credentials // nil: an ErrInvalid error
	}{
		{"oauth2 expires_in", integrations.AuthModeOAuth2, ImportInput{AccessToken: "a", RefreshToken: "r", ExpiresIn: n(60)},
			&Credentials{Type: "OAUTH2", AccessToken: "a", RefreshToken: "r", ExpiresAt: ptr(now.Add(time.Minute)), ObtainedAt: ptr(now),
				Raw: map[string]any{"access_token": "a", "refresh_token": "r", "expires_at": "2026-01-01T00:01:00Z"}}},
		{"oauth2 no expiry", integrations.AuthModeOAuth2, ImportInput{AccessToken: "a"}, nil},
		{"oauth2 no token", integrations.AuthModeOAuth2, ImportInput{NoExpiration: true}, nil},
		{"oauth2 override", integrations.AuthModeOAuth2, ImportInput{AccessToken: "a", NoExpiration: true, OAuthClientIDOverride: "id", OAuthClientSecretOverride: "sec"},
			&Credentials{Type: "OAUTH2", AccessToken: "a", Raw: map[string]any{"access_token": "a"}, ConfigOverride: &ConfigOverride{ClientID: "id", ClientSecret: "sec"}}},
		{"oauth1", integrations.AuthModeOAuth1, ImportInput{OAuthToken: "t", OAuthTokenSecret: "s"}, &Credentials{Type: "OAUTH1", OAuthToken: "t", OAuthTokenSecret: "s"}},
		{"oauth1 no secret", integrations.AuthModeOAuth1, ImportInput{OAuthToken: "t"}, nil},
		{"basic", integrations.AuthModeBasic, ImportInput{Username: s("u"), Password: s("")}, &Credentials{Type: "BASIC", Username: "u"}},
		{"basic no password", integrations.AuthModeBasic, ImportInput{Username: s("u")}, nil},
		{"api key", integrations.AuthModeAPIKey, ImportInput{APIKey: "k"}, &Credentials{Type: "API_KEY", APIKey: "k"}},
		{"api key missing", integrations.AuthModeAPIKey, ImportInput{}, nil},
		{"nested", integrations.AuthModeAPIKey, ImportInput{Credentials: &Credentials{APIKey: "k"}}, &Credentials{Type: "API_KEY", APIKey: "k"}},
		{"nested mismatch", integrations.AuthModeAPIKey, ImportInput{Credentials: &Credentials{Type: "BASIC", Username: "u"}}, nil},
		{"client credentials", integrations.AuthModeOAuth2CC, ImportInput{OAuthClientIDOverride: "id", OAuthClientSecretOverride: "s", AccessToken: "tok"},
			&Credentials{Type: "OAUTH2_CC", Token: "tok", ClientID: "id", ClientSecret: "s"}},
		{"unknown mode", "TWO_STEP", ImportInput{}, nil},
	} {
		got, err := importCredentials(tc.mode, &tc.in, now)
		if tc.want == nil {
			if !errors.Is(err, store.ErrInvalid) {
				t.Errorf("%s: err %v, want ErrInvalid", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestAPICredentialsHidesRefreshToken(t *testing.T) {
	t.Parallel()
	c := &Credentials{Type: "OAUTH2", AccessToken: "a", RefreshToken: "r", Raw: map[string]any{"refresh_token": "r", "scope": "x"}}
	b, _ := json.Marshal(APICredentials(c, false))
	if strings.Contains(string(b), `"r"`) {
		t.Errorf("refresh token in %s", b)
	}
	if c.Raw["refresh_token"] != "r" {
		t.Error("APICredentials changed the credentials' raw map")
	}
	b, _ = json.Marshal(APICredentials(c, true))
	if !strings.Contains(string(b), `"refresh_token":"r"`) {
		t.Errorf("refresh token missing in %s", b)
	}
	b, _ = json.Marshal(APICredentials(&Credentials{Type: "NONE"}, true))
	if string(b) != "{}" {
		t.Errorf("NONE = %s", b)
	}
}

func FuzzImportBody(f *testing.F) {
	f.Add(`{"provider_config_key":"gh","expires_at":"2030-01-01","connection_id":["a"],"username":null}`)
	f.Add(`{"credentials":{"type":"OAUTH2","expires_at":"x"}}`)
	f.Fuzz(func(t *testing.T, body string) {
		var in ImportInput
		if json.Unmarshal([]byte(body), &in) != nil {
			return
		}
		for _, mode := range []string{integrations.AuthModeOAuth2, integrations.AuthModeOAuth1, integrations.AuthModeOAuth2CC, integrations.AuthModeAPIKey, integrations.AuthModeBasic, integrations.AuthModeApp, integrations.AuthModeNone, integrations.AuthModeTBA, "X"} {
			c, err := importCredentials(mode, &in, time.Now())
			if err != nil && !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("%s: %v is not ErrInvalid", mode, err)
			}
			if err == nil && c == nil {
				t.Fatalf("%s: nil credentials without error", mode)
			}
		}
		var l StringList
		_ = json.Unmarshal([]byte(body), &l)
	})
}
