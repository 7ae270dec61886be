package connections_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
)

// checkAnswer fails unless the answer GET /connections/{id} writes for c
// is what json.Marshal writes for APIFull(c, withCreds, withRefresh).
func checkAnswer(t *testing.T, c *connections.Connection, withCreds, withRefresh bool) {
	t.Helper()
	want, err := json.Marshal(connections.APIFull(c, withCreds, withRefresh))
	if err != nil {
		t.Fatal(err)
	}
	got, err := connections.AppendFullAnswer([]byte("x"), c, withCreds, withRefresh)
	if err != nil || !bytes.Equal(got, append([]byte("x"), want...)) {
		t.Fatalf("the answer: %v\n got %s\nwant x%s", err, got, want)
	}
}

var jsonTexts = []string{"", "a", "<&>", "quote \" \\", "\u2028", "bad \xff", "日本", "line\nbreak"}

func randomText(r *rand.Rand) string { return jsonTexts[r.IntN(len(jsonTexts))] }

func randomObject(r *rand.Rand) map[string]any {
	switch r.IntN(4) {
	case 0:
		return nil
	case 1:
		return map[string]any{}
	}
	m := map[string]any{}
	for range r.IntN(5) {
		var v any
		switch r.IntN(6) {
		case 0:
			v = randomText(r)
		case 1:
			v = r.Float64() * 1e6
		case 2:
			v = []any{randomText(r), 1e-9, true, nil}
		case 3:
			v = map[string]any{randomText(r): randomText(r), "n": 7.0}
		case 4:
			v = nil
		default:
			v = r.IntN(2) == 0
		}
		m[randomText(r)+string(rune('a'+r.IntN(26)))] = v
	}
	return m
}

func randomTags(r *rand.Rand) map[string]string {
	if r.IntN(4) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, k := range []string{connections.TagEndUserID, connections.TagEndUserDisplayName, connections.TagEndUserEmail,
		connections.TagOrganizationID, connections.TagOrganizationDisplayName, "team", "<k>"} {
		if r.IntN(2) == 0 {
			m[k] = randomText(r)
		}
	}
	return m
}

// randomCredentials returns credentials of every auth mode, with every
// field set or not.
func randomCredentials(r *rand.Rand, depth int) *connections.Credentials {
	modes := []string{integrations.AuthModeOAuth2, integrations.AuthModeOAuth1, integrations.AuthModeOAuth2CC,
		integrations.AuthModeAPIKey, integrations.AuthModeBasic, integrations.AuthModeApp, integrations.AuthModeTBA,
		integrations.AuthModeAWSSigV4, integrations.AuthModeNone, integrations.AuthModeTwoStep, integrations.AuthModeJWT,
		integrations.AuthModeSignature, integrations.AuthModeBill}
	if depth > 0 {
		modes = append(modes, integrations.AuthModeCustom)
	}
	text := func() string {
		if r.IntN(3) == 0 {
			return ""
		}
		return randomText(r) + "tok"
	}
	c := &connections.Credentials{Type: modes[r.IntN(len(modes))], AccessToken: text(), RefreshToken: text(),
		Raw: randomObject(r), OAuthToken: text(), OAuthTokenSecret: text(), Token: text(), ClientID: text(),
		ClientSecret: text(), APIKey: text(), Username: text(), Password: text(), JWTToken: text(), TokenID: text(),
		TokenSecret: text(), Inputs: randomObject(r)}
	if r.IntN(2) == 0 {
		exp := time.Date(2027, 1, 2, 3, 4, 5, r.IntN(1e9), time.UTC)
		c.ExpiresAt = &exp
	}
	if r.IntN(2) == 0 {
		if c.Raw == nil {
			c.Raw = map[string]any{}
		}
		c.Raw["refresh_token"] = text()
	}
	if r.IntN(4) == 0 {
		c.ConfigOverride = &connections.ConfigOverride{ClientID: text(), ClientSecret: text()}
	}
	if c.Type == integrations.AuthModeCustom {
		c.App = randomCredentials(r, depth-1)
		c.App.Type = integrations.AuthModeApp
		if r.IntN(2) == 0 {
			c.User = randomCredentials(r, depth-1)
			c.User.Type = integrations.AuthModeOAuth2
		}
	}
	return c
}

// TestAnswerMatchesMarshal: the answer of GET /connections/{id}, written
// without reflection, is what json.Marshal writes of APIFull, for connections of
// every auth mode with and without their optional fields.
func TestAnswerMatchesMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		c := &connections.Connection{ID: int64(i) - 5, ConnectionID: randomText(r) + "id", IntegrationKey: randomText(r),
			Provider: randomText(r), ConnectionConfig: randomObject(r), Metadata: randomObject(r), Tags: randomTags(r),
			WebhookURLOverride: randomText(r), CreatedAt: time.Unix(int64(i)*1000, 0), UpdatedAt: time.Now()}
		if r.IntN(2) == 0 {
			at := time.Now()
			c.LastFetchedAt = &at
		}
		if r.IntN(2) == 0 {
			c.Errors = []connections.Error{{Type: randomText(r), LogID: randomText(r)}, {Type: "auth"}}
		}
		if r.IntN(2) == 0 {
			exp, failed := time.Unix(int64(i)*7, int64(r.IntN(1e9))).UTC(), time.Now()
			c.AuthMode, c.CredentialsExpiresAt, c.LastRefreshFailure, c.RefreshAttempts = randomText(r), &exp, &failed, r.IntN(9)
		}
		if r.IntN(5) > 0 {
			c.Credentials = randomCredentials(r, 1)
		}
		withCreds, withRefresh := r.IntN(5) > 0, r.IntN(2) == 0
		checkAnswer(t, c, withCreds, withRefresh)
		full := mustMarshal(t, connections.APIFull(c, withCreds, withRefresh))
		if strings.Contains(string(full), `"credentials"`) != (withCreds && c.Credentials != nil) {
			t.Fatalf("credentials written: %s; want them %v", full, withCreds)
		}
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
