package connect_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/webhooks"
)

// floodPost sends an anonymous incoming webhook and returns its status and
// error code.
func floodPost(t *testing.T, url, body string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &e)
	return resp.StatusCode, e.Error.Code, resp.Header
}

// forwardBytes is what the environment's forward deliveries are charged
// against the storage quota (webhooks.ForwardCharge of each), the total of
// their bodies, and their number.
func forwardBytes(t *testing.T, bu *bundle) (charged, bodies int64, n int) {
	t.Helper()
	ds := bu.deliveries(t, webhooks.DeliveryFilter{Type: webhooks.TypeForward, Limit: 1000})
	for _, d := range ds {
		charged += d.ForwardCharge()
		bodies += int64(len(d.Body))
	}
	return charged, bodies, len(ds)
}

// TestIncomingWebhookFloodStaysBounded: anonymous posts of the largest body
// allowed to an integration whose provider does not sign its webhooks
// (notion) cannot make the Store hold more than the integration's storage
// quota of forwards (bodies and rows, as webhooks.ForwardCharge counts
// them). While the application does not take them (the
// Service is not started), the pending forwards fill the quota and further
// posts are refused with 429; once it takes them, each new forward
// replaces the oldest delivered ones, and every post is accepted. The log
// holds no body, and one sampled entry for all the refusals.
func TestIncomingWebhookFloodStaysBounded(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		const maxBody, quota = 64 << 10, 1 << 20
		var received atomic.Int32
		recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			received.Add(1)
		}))
		t.Cleanup(recv.Close)
		bu := setup(t, b, func(c *connect.Config) {
			c.IncomingWebhooks = connect.IncomingWebhooksConfig{MaxBody: maxBody, StorageQuota: quota}
			c.Webhooks = webhooks.DeliveryConfig{Backoff: 5 * time.Millisecond, Timeout: 5 * time.Second}
			c.MaintenanceInterval = -1
		})
		urls := []string{recv.URL + "/a", recv.URL + "/b"}
		if _, err := bu.svc.Environments().Update(t.Context(), bu.env.ID, environments.UpdateInput{WebhookURLs: &urls}); err != nil {
			t.Fatal(err)
		}
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"notion","unique_key":"notion"}`})
		url := bu.srv.URL + "/webhook/dev/notion"
		largest := `{"pad":"` + strings.Repeat("a", maxBody-10) + `"}`
		if len(largest) != maxBody {
			t.Fatalf("body of %d bytes", len(largest))
		}
		checkBound := func(when string) int {
			t.Helper()
			charged, bodies, n := forwardBytes(t, bu)
			if charged > quota || bodies > quota {
				t.Fatalf("%s: %d forwards charged %d bytes (bodies %d), over the quota of %d", when, n, charged, bodies, quota)
			}
			if b.db != nil {
				// Measured in the database: the bodies of every delivery,
				// and the usage the quota reads.
				var sum, usage int64
				q := pq.QuoteIdentifier(b.schema)
				if err := b.db.QueryRowContext(t.Context(), `SELECT coalesce(sum(octet_length(body)), 0) FROM `+q+
					`.webhook_deliveries`).Scan(&sum); err != nil {
					t.Fatal(err)
				}
				if err := b.db.QueryRowContext(t.Context(), `SELECT coalesce(sum(bytes), 0) FROM `+q+
					`.webhook_forward_usage`).Scan(&usage); err != nil {
					t.Fatal(err)
				}
				if sum != bodies || usage != charged {
					t.Fatalf("%s: the database holds %d bytes of delivery bodies (%d listed); usage says %d, the forwards' charges total %d",
						when, sum, bodies, usage, charged)
				}
			}
			return n
		}

		if status, code, _ := floodPost(t, url, largest+" "); status != 413 || code != "payload_too_large" {
			t.Fatalf("a body over the limit: %d %s", status, code)
		}
		if _, _, n := forwardBytes(t, bu); n != 0 {
			t.Fatalf("%d forwards stored for a refused body", n)
		}

		// The application takes nothing: the pending forwards fill the quota.
		const posts = 40
		accepted := 0
		for i := range posts {
			status, code, h := floodPost(t, url, largest)
			switch {
			case status == 200 && accepted == i:
				accepted++
			case status == 429 && code == "webhook_storage_full" && h.Get("Retry-After") == "60":
			default:
				t.Fatalf("post %d (after %d accepted): %d %s", i, accepted, status, code)
			}
		}
		charged, _, _ := forwardBytes(t, bu)
		perPost := charged / int64(accepted) // two destinations
		if want := int(quota / perPost); accepted != want || charged != int64(accepted)*perPost {
			t.Errorf("%d posts accepted, want %d (forwards charged %d bytes each, quota %d)", accepted, want, perPost, quota)
		}
		checkBound("pending")
		var refusals []*oplog.Entry
		es, err := bu.svc.ListLogs(t.Context(), oplog.Filter{EnvironmentID: bu.env.ID, Type: "webhook", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.Operation == "incoming" && e.Status == oplog.StatusFailure {
				refusals = append(refusals, e)
			}
		}
		if len(refusals) != 1 || refusals[0].Meta["reason"] != "storage_full" {
			t.Errorf("refusals logged: %+v", refusals)
		}

		// The application takes them: each new forward deletes the oldest
		// delivered ones.
		bu.start(t)
		bu.settle(t, 2*accepted)
		const more = 20 // 2.5 times the quota
		for i := range more {
			if status, code, _ := floodPost(t, url, largest); status != 200 {
				t.Fatalf("post %d once the application takes them: %d %s", i, status, code)
			}
			bu.settle(t, 0)
			if n := checkBound("delivered"); n > 2*accepted+2 {
				t.Fatalf("%d forwards kept", n)
			}
		}
		if got, want := int(received.Load()), 2*(accepted+more); got != want {
			t.Errorf("the application received %d forwards, want %d", got, want)
		}

		// No log entry holds a body.
		es, err = bu.svc.ListLogs(t.Context(), oplog.Filter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			meta, _ := json.Marshal(e.Meta)
			if size := len(e.Message) + len(meta); size > 2048 {
				t.Errorf("log entry %s/%s of %d bytes", e.Type, e.Operation, size)
			}
		}
		if b.db != nil {
			var deliveries, logs int64
			q := pq.QuoteIdentifier(b.schema)
			if err := b.db.QueryRowContext(t.Context(), `SELECT pg_total_relation_size($1::regclass), pg_total_relation_size($2::regclass)`,
				q+".webhook_deliveries", q+".operations_log").Scan(&deliveries, &logs); err != nil {
				t.Fatal(err)
			}
			t.Logf("after %d posts of %d bytes: webhook_deliveries takes %d bytes on disk (dead rows included until vacuumed), operations_log %d (%d entries)",
				posts+more+1, maxBody, deliveries, logs, len(es))
		}
	})
}

// TestIncomingWebhooksConfig: limits that cannot work are refused by New.
func TestIncomingWebhooksConfig(t *testing.T) {
	t.Parallel()
	// Four forwards of MaxBody bytes, as charged.
	four := 4 * webhooks.ForwardCharge(1000, 0)
	for _, c := range []connect.IncomingWebhooksConfig{
		{MaxBody: -1},
		{MaxBody: 1 << 20, StorageQuota: 4<<20 - 1},
		{StorageQuota: 1 << 20}, // under four times the default MaxBody
		{MaxBody: 1000, StorageQuota: 4000},
		{MaxBody: 1000, StorageQuota: four - 1},
		{LogInterval: -time.Second},
	} {
		_, err := connect.New(connect.Config{Store: memoryStore(), EncryptionKeys: []connect.EncryptionKey{testKey}, IncomingWebhooks: c})
		if err == nil || !strings.Contains(err.Error(), "IncomingWebhooks") {
			t.Errorf("New with IncomingWebhooks %+v: %v", c, err)
		}
	}
	for _, c := range []connect.IncomingWebhooksConfig{{}, {MaxBody: 1000, StorageQuota: four}, {StorageQuota: -1},
		{LogInterval: time.Second}} {
		if _, err := connect.New(connect.Config{Store: memoryStore(), EncryptionKeys: []connect.EncryptionKey{testKey}, IncomingWebhooks: c}); err != nil {
			t.Errorf("New with IncomingWebhooks %+v: %v", c, err)
		}
	}
}
