package connect_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/embedauth/connect/webhooks"
)

// TestIncomingWebhookForwarded sends a signed GitHub webhook to the mounted
// route and checks that the environment's receiver gets one signed forward
// webhook for the connection the payload names; a bad signature forwards
// nothing.
func TestIncomingWebhookForwarded(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, b *backend) {
		var bu *bundle
		// The receiver checks the timestamped signature against the
		// Service's (fake) clock.
		rc := newHookReceiver(t, func() time.Time { return bu.now.Now() }, always(200))
		bu = hookSetup(t, b, []string{rc.srv.URL})
		// GitHub deliveries are verified with the webhook secret kept in the
		// integration's credentials.
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"ghw",
			"credentials":{"type":"OAUTH2","client_id":"a","client_secret":"b","webhook_secret":"gh-hook-secret"}}`})
		bu.mustDo(t, 201, req{method: "POST", path: "/connections", body: `{"provider_config_key":"ghw","connection_id":"acme",
			"access_token":"t","no_expiration":true,"connection_config":{"installation_id":"4242"}}`})

		body := `{"action":"opened","installation":{"id":4242},"issue":{"number":7}}`
		mac := hmac.New(sha256.New, []byte("gh-hook-secret"))
		mac.Write([]byte(body))
		sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))

		post := func(signature string) int {
			r, _ := http.NewRequest("POST", bu.srv.URL+"/webhook/dev/ghw", strings.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("X-GitHub-Event", "issues")
			if signature != "" {
				r.Header.Set("X-Hub-Signature-256", signature)
			}
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if got := post("sha256=" + strings.Repeat("0", 64)); got != 401 {
			t.Errorf("wrong signature: %d", got)
		}
		if got := post(""); got != 401 {
			t.Errorf("no signature: %d", got)
		}
		if got := post(sig); got != 200 {
			t.Fatalf("signed webhook: %d", got)
		}
		ds := bu.settle(t, 1)
		if len(ds) != 1 || ds[0].Type != webhooks.TypeForward || ds[0].Status != webhooks.StatusDelivered {
			t.Fatalf("deliveries %+v", ds)
		}
		calls := rc.calls()
		if len(calls) != 1 || !calls[0].authentic {
			t.Fatalf("receiver got %d calls (authentic %v)", len(calls), len(calls) == 1 && calls[0].authentic)
		}
		want := map[string]any{"from": "github", "type": "forward", "connectionId": "acme", "providerConfigKey": "ghw",
			"payload": map[string]any{"action": "opened", "installation": map[string]any{"id": float64(4242)}, "issue": map[string]any{"number": float64(7)}}}
		if diff := cmp.Diff(want, calls[0].body); diff != "" {
			t.Errorf("forward body (-want +got):\n%s", diff)
		}
	})
}
