package connect_test

import (
	"context"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
)

// shortLived makes the token server answer expires_in 300 (5 minutes) on
// fake-oauth's token URL and 3600 elsewhere.
func shortLived(rb *refreshBundle) {
	rb.ts.set(func(ts *tokenServer) {
		ts.expiresIn = func(path string) int {
			if path == "/acme/token" {
				return 300
			}
			return 3600
		}
	})
}

// TestRefreshShortLivedTokenOnRead: a provider whose tokens live 5 minutes
// (less than the 15-minute threshold) is not refreshed on every read: a
// read refreshes the token once it has at most half of its lifetime left,
// through the API and from Go alike; a forced read always refreshes. A
// token whose lifetime is unknown (imported with expires_at) follows the
// threshold alone, once.
func TestRefreshShortLivedTokenOnRead(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		rb := refreshSetup(t, b)
		shortLived(rb)
		calls := func(want int, when string) {
			t.Helper()
			if n := rb.ts.callCount(); n != want {
				t.Fatalf("%s: token endpoint called %d times, want %d", when, n, want)
			}
		}
		// Imported with expires_at: its lifetime is unknown, so the
		// threshold decides: the first read refreshes it.
		rb.importOAuth(t, "fo", "c1", "rt-0", time.Minute, "")
		if creds := rb.get(t, "fo", "c1", ""); creds["access_token"] != "at-1" {
			t.Fatalf("first read: %v", creds)
		}
		calls(1, "first read of a token expiring in a minute")
		issued := rb.clock.Now()

		// The new token lives 5 minutes: reads seconds later, and up to
		// half of its lifetime, use it as it is.
		for _, at := range []time.Duration{0, 10 * time.Second, time.Minute, 2*time.Minute + 29*time.Second} {
			rb.clock.ns.Store(issued.Add(at).UnixNano())
			if creds := rb.get(t, "fo", "c1", ""); creds["access_token"] != "at-1" {
				t.Fatalf("read %v after issue: %v", at, creds)
			}
			c, err := rb.svc.Connections().Get(context.Background(), rb.env.ID, "fo", "c1", connections.GetOptions{})
			if err != nil || c.Credentials.AccessToken != "at-1" {
				t.Fatalf("Go read %v after issue: %v %v", at, c, err)
			}
			calls(1, "a read "+at.String()+" after issue")
		}
		// Past half of it, the next read refreshes, once.
		rb.clock.ns.Store(issued.Add(2*time.Minute + 31*time.Second).UnixNano())
		if creds := rb.get(t, "fo", "c1", ""); creds["access_token"] != "at-2" {
			t.Fatalf("read past half of the lifetime: %v", creds)
		}
		calls(2, "a read past half of the lifetime")
		rb.get(t, "fo", "c1", "")
		calls(2, "a read right after the refresh")

		// A forced read always refreshes.
		for i := range 2 {
			if creds := rb.get(t, "fo", "c1", "&force_refresh=true"); creds["access_token"] == "at-2" {
				t.Fatalf("forced read %d: %v", i, creds)
			}
			calls(3+i, "a forced read")
		}

		// Imported with expires_in: the lifetime counts from the import.
		rb.ts.allow("rt-x")
		rb.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"fo","connection_id":"c2",
			"access_token":"at-imported","refresh_token":"rt-x","expires_in":300,"connection_config":{"tenant":"acme"}}`})
		if creds := rb.get(t, "fo", "c2", ""); creds["access_token"] != "at-imported" {
			t.Fatalf("read right after an import with expires_in 300: %v", creds)
		}
		calls(4, "a read right after an import with expires_in 300")
		rb.clock.advance(2*time.Minute + 31*time.Second)
		if creds := rb.get(t, "fo", "c2", ""); creds["access_token"] == "at-imported" {
			t.Fatalf("read past half of an imported lifetime: %v", creds)
		}
		calls(5, "a read past half of an imported lifetime")

		// A token that lives longer than twice the threshold is refreshed
		// within the threshold, as before.
		rb.ts.allow("rt-long")
		rb.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"fb","connection_id":"long",
			"access_token":"at-long","refresh_token":"rt-long","expires_in":3600}`})
		rb.clock.advance(45*time.Minute - time.Second)
		if creds := rb.get(t, "fb", "long", ""); creds["access_token"] != "at-long" {
			t.Fatalf("read 15 min 1 s before expiry: %v", creds)
		}
		calls(5, "a read of a 1-hour token 15 min 1 s before expiry")
		rb.clock.advance(2 * time.Second)
		if creds := rb.get(t, "fb", "long", ""); creds["access_token"] == "at-long" {
			t.Fatalf("read within the threshold: %v", creds)
		}
		calls(6, "a read of a 1-hour token within the threshold")
	})
}

// TestProxyShortLivedToken: the proxy refreshes a 5-minute token by the
// same rule as reads, and its connection cache keeps serving the
// connection while the token is not due (it was bypassed, and the token
// refreshed, on every call before).
func TestProxyShortLivedToken(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		pb := proxySetup(t, b)
		pb.ts.set(func(ts *tokenServer) { ts.expiresIn = func(string) int { return 300 } })
		pb.importOAuth(t, pxOAuth, "short", "rt-s", time.Minute, "")
		hdr := map[string]string{"Connection-Id": "short", "Provider-Config-Key": pxOAuth}
		call := func(wantToken string, wantCalls int, when string) {
			t.Helper()
			resp, body := pb.call(t, "GET", "/proxy/me", hdr, "")
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", when, resp.StatusCode, body)
			}
			if got := pb.up.last().header.Get("Authorization"); got != "Bearer "+wantToken || pb.ts.callCount() != wantCalls {
				t.Fatalf("%s: upstream got %q after %d token calls, want %q after %d", when, got, pb.ts.callCount(), wantToken, wantCalls)
			}
		}
		call("at-1", 1, "first call (a token expiring in a minute)")
		issued := pb.clock.Now()
		// Later calls, past the cache's 5 s, read the connection again
		// and find the 5-minute token not due.
		for _, at := range []time.Duration{time.Second, 10 * time.Second, time.Minute, 2 * time.Minute} {
			pb.clock.ns.Store(issued.Add(at).UnixNano())
			call("at-1", 1, "a call "+at.String()+" after issue")
		}

		// Within its TTL the cache serves the connection: deleted behind
		// the Service's back (straight in the Store), it is still called.
		if err := pb.b.store.DeleteConnection(context.Background(), pb.env.ID, pxOAuth, "short"); err != nil {
			t.Fatal(err)
		}
		pb.clock.advance(time.Second)
		call("at-1", 1, "a cached call")
		pb.clock.advance(connect.DefaultProxyCacheTTL)
		if resp, body := pb.call(t, "GET", "/proxy/me", hdr, ""); resp.StatusCode != 404 {
			t.Fatalf("after the cache's TTL: %d %s, want 404", resp.StatusCode, body)
		}

		// Past half of its lifetime the token is refreshed first.
		pb.importOAuth(t, pxOAuth, "short2", "rt-s2", time.Minute, "")
		hdr["Connection-Id"] = "short2"
		call("at-2", 2, "first call of short2")
		pb.clock.advance(2*time.Minute + 31*time.Second)
		call("at-3", 3, "a call past half of the lifetime")
	})
}

// TestSweepShortLivedToken: the background sweep does not refresh a token
// that lives shorter than its window (interval 5 min + threshold 15 min)
// at every pass, but once per window; a token that lives longer is
// refreshed before it expires, as before; and a read between passes
// refreshes a short-lived token that expired.
func TestSweepShortLivedToken(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		rb := refreshSetup(t, b)
		// fo: 5-minute tokens; fb: tokens of 61.5 minutes (so that no
		// pass falls on a boundary).
		rb.ts.set(func(ts *tokenServer) {
			ts.expiresIn = func(path string) int {
				if path == "/acme/token" {
					return 300
				}
				return 3690
			}
		})
		rb.importOAuth(t, "fo", "short", "rt-s", time.Minute, "")
		rb.importOAuth(t, "fb", "long", "rt-l", 29*time.Minute, "")
		expiry := map[string]time.Time{"short": *rb.stored(t, "fo", "short").CredentialsExpiresAt,
			"long": *rb.stored(t, "fb", "long").CredentialsExpiresAt}
		refreshed := map[string][]int{}
		const interval = 5 * time.Minute
		for pass := range 13 {
			if pass > 0 {
				rb.clock.advance(interval)
			}
			if _, err := rb.svc.Sweep(context.Background(), interval); err != nil {
				t.Fatal(err)
			}
			for id, key := range map[string]string{"short": "fo", "long": "fb"} {
				// A refresh moves the expiry (stored in the clear).
				exp := *rb.stored(t, key, id).CredentialsExpiresAt
				if !exp.Equal(expiry[id]) {
					refreshed[id] = append(refreshed[id], pass)
				}
				expiry[id] = exp
				// A token the sweep keeps fresh never reaches a read
				// within the threshold before the next pass.
				if id == "long" && exp.Sub(rb.clock.Now()) < interval+15*time.Minute {
					t.Errorf("pass %d: the 1-hour token expires in %v", pass, exp.Sub(rb.clock.Now()))
				}
			}
		}
		// short: refreshed by the first pass (its lifetime unknown, it
		// expired within the window), then once every 20 minutes (4
		// passes), not at every pass. long: refreshed once it expired
		// within the window (pass 2), then again once it did (pass 11).
		want := map[string][]int{"short": {0, 4, 8, 12}, "long": {2, 11}}
		for id := range want {
			if !equalInts(refreshed[id], want[id]) {
				t.Errorf("%s refreshed at passes %v, want %v", id, refreshed[id], want[id])
			}
		}
		// Between passes, a read of the expired short token refreshes it.
		rb.clock.advance(6 * time.Minute)
		before := rb.ts.callCount()
		c, err := rb.svc.Connections().Get(context.Background(), rb.env.ID, "fo", "short", connections.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rb.ts.callCount() != before+1 || !c.Credentials.ExpiresAt.After(rb.clock.Now()) {
			t.Errorf("read of an expired short token: %d token calls, expires at %v (now %v)",
				rb.ts.callCount()-before, c.Credentials.ExpiresAt, rb.clock.Now())
		}
	})
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
