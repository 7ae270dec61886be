package connections

import (
	"testing"
	"time"

	"github.com/embedauth/connect/integrations"
)

// TestRefreshDue: the rule of reads and of the proxy. A token is due when
// it expires within the threshold and, when its lifetime is known, has at
// most half of it left.
func TestRefreshDue(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	const threshold = 15 * time.Minute
	token := func(obtained *time.Time, life time.Duration) *Credentials {
		exp := t0.Add(life)
		return &Credentials{Type: integrations.AuthModeOAuth2, AccessToken: "at", RefreshToken: "rt", ExpiresAt: &exp, ObtainedAt: obtained}
	}
	five := token(&t0, 5*time.Minute)
	hour := token(&t0, time.Hour)
	unknown := token(nil, 5*time.Minute)
	for _, tc := range []struct {
		name string
		c    *Credentials
		at   time.Duration
		want bool
	}{
		{"5-min token at issue", five, 0, false},
		{"5-min token 10 s after issue", five, 10 * time.Second, false},
		{"5-min token just before half", five, 2*time.Minute + 29*time.Second, false},
		{"5-min token at half", five, 2*time.Minute + 30*time.Second, true},
		{"5-min token expired", five, 6 * time.Minute, true},
		{"1-hour token outside the threshold", hour, 45*time.Minute - time.Second, false},
		{"1-hour token at the threshold", hour, 45 * time.Minute, true},
		{"unknown lifetime within the threshold", unknown, 0, true},
		{"unknown lifetime outside the threshold", token(nil, time.Hour), 0, false},
		{"obtained after expiry: lifetime unknown", token(ptr(t0.Add(time.Hour)), 5*time.Minute), 0, true},
		{"no expiry", &Credentials{Type: integrations.AuthModeOAuth2, AccessToken: "at", RefreshToken: "rt", ObtainedAt: &t0}, 0, false},
		{"client credentials without a token", &Credentials{Type: integrations.AuthModeOAuth2CC, ClientID: "id", ClientSecret: "s"}, 0, true},
		{"nil", nil, 0, false},
	} {
		if got := RefreshDue(tc.c, t0.Add(tc.at), threshold); got != tc.want {
			t.Errorf("%s: RefreshDue = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSweepDue: a sweep with a 20-minute window refreshes long-lived tokens
// that expire within it, and short-lived ones only once they are a window
// old.
func TestSweepDue(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	const window = 20 * time.Minute
	token := func(obtained *time.Time, life time.Duration) *Credentials {
		exp := t0.Add(life)
		return &Credentials{Type: integrations.AuthModeOAuth2, AccessToken: "at", RefreshToken: "rt", ExpiresAt: &exp, ObtainedAt: obtained}
	}
	five := token(&t0, 5*time.Minute)
	hour := token(&t0, time.Hour)
	for _, tc := range []struct {
		name string
		c    *Credentials
		at   time.Duration
		want bool
	}{
		{"5-min token expired, 5 min old", five, 5 * time.Minute, false},
		{"5-min token expired, 19 min old", five, 19 * time.Minute, false},
		{"5-min token expired, a window old", five, window, true},
		{"1-hour token outside the window", hour, 40*time.Minute - time.Second, false},
		{"1-hour token within the window", hour, 40 * time.Minute, true},
		{"30-min token: half left but younger than the window", token(&t0, 30*time.Minute), 15 * time.Minute, false},
		{"30-min token a window old", token(&t0, 30*time.Minute), window, true},
		{"unknown lifetime within the window", token(nil, 5*time.Minute), 0, true},
		{"client credentials without a token", &Credentials{Type: integrations.AuthModeOAuth2CC, ClientID: "id", ClientSecret: "s"}, 0, true},
	} {
		if got := SweepDue(tc.c, t0.Add(tc.at), window); got != tc.want {
			t.Errorf("%s: SweepDue = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestObtainedAtRecorded: every way of obtaining a token records when, and
// an import says so only with expires_in.
func TestObtainedAtRecorded(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 123456789, time.UTC)
	ms := now.Truncate(time.Millisecond)
	for _, grant := range []string{GrantRefreshToken, GrantClientCredentials, GrantAppInstallation, "authorization_code"} {
		c := mergeTokens(&Credentials{Type: integrations.AuthModeOAuth2}, &TokenResponse{AccessToken: "at", ExpiresIn: 5 * time.Minute}, grant, now)
		if life, ok := c.Lifetime(); c.ObtainedAt == nil || !c.ObtainedAt.Equal(ms) || !ok || life != 5*time.Minute {
			t.Errorf("%s: obtained %v, lifetime %v %v", grant, c.ObtainedAt, life, ok)
		}
	}
	c, err := importCredentials(integrations.AuthModeOAuth2, &ImportInput{AccessToken: "a", ExpiresIn: ptr(int64(300))}, now)
	if life, ok := c.Lifetime(); err != nil || !ok || life != 5*time.Minute {
		t.Errorf("import with expires_in: lifetime %v %v, %v", life, ok, err)
	}
	c, err = importCredentials(integrations.AuthModeOAuth2, &ImportInput{AccessToken: "a", ExpiresAt: &DateTime{Time: now.Add(time.Hour)}}, now)
	if err != nil || c.ObtainedAt != nil {
		t.Errorf("import with expires_at: obtained %v, %v", c.ObtainedAt, err)
	}
	c, err = importCredentials(integrations.AuthModeOAuth2, &ImportInput{Credentials: &Credentials{Type: integrations.AuthModeOAuth2, AccessToken: "a",
		ExpiresAt: ptr(now.Add(time.Hour)), ObtainedAt: ptr(now.Add(-time.Hour))}}, now)
	if err != nil || c.ObtainedAt != nil {
		t.Errorf("nested credentials: obtained %v (the caller's), %v", c.ObtainedAt, err)
	}
}
