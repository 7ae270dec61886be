package connect_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
			// Measured in the database: the bodies of every delivery, and
			// the usage the quota reads.
			var sum, usage int64
			db := b.sqlDB(t)
			if err := db.QueryRowContext(t.Context(), `SELECT coalesce(sum(octet_length(body)), 0) FROM `+
				b.table("webhook_deliveries")).Scan(&sum); err != nil {
				t.Fatal(err)
			}
			if err := db.QueryRowContext(t.Context(), `SELECT coalesce(sum(bytes), 0) FROM `+
				b.table("webhook_forward_usage")).Scan(&usage); err != nil {
				t.Fatal(err)
			}
			if sum != bodies || usage != charged {
				t.Fatalf("%s: the database holds %d bytes of delivery bodies (%d listed); usage says %d, the forwards' charges total %d",
					when, sum, bodies, usage, charged)
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
		_, deliveries := b.rowBytes(t, "webhook_deliveries")
		_, logs := b.rowBytes(t, "operations_log")
		t.Logf("after %d posts of %d bytes: webhook_deliveries takes %d bytes on disk (dead rows or free pages included until reused), operations_log %d (%d entries)",
			posts+more+1, maxBody, deliveries, logs, len(es))
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
		cfg := baseConfig(t)
		cfg.IncomingWebhooks = c
		_, err := connect.New(cfg)
		if err == nil || !strings.Contains(err.Error(), "IncomingWebhooks") {
			t.Errorf("New with IncomingWebhooks %+v: %v", c, err)
		}
	}
	for _, c := range []connect.IncomingWebhooksConfig{{}, {MaxBody: 1000, StorageQuota: four}, {StorageQuota: -1},
		{LogInterval: time.Second}} {
		cfg := baseConfig(t)
		cfg.IncomingWebhooks = c
		if _, err := connect.New(cfg); err != nil {
			t.Errorf("New with IncomingWebhooks %+v: %v", c, err)
		}
	}
}

// Documented bounds of what the operations log keeps of webhooks that no
// signature verified (see connect.IncomingWebhooksConfig and the package
// doc of webhooks): per integration and instance, at most
// sampledOutcomes × (Retention.Logs / LogInterval + 1) entries of at most
// maxSampledEntry bytes on disk.
const (
	sampledOutcomes = 10
	maxSampledEntry = 5 << 10
)

// floodMeasure is what a flood left in the Store.
type floodMeasure struct {
	// charged is the usage the quota reads (TrimForwards with no bound);
	// forwards the forward deliveries kept.
	charged  int64
	forwards int
	// entries are the operations log entries of the integration's
	// webhooks.
	entries []*oplog.Entry
	// deliveryRows and logRows are the sizes of the rows of
	// webhook_deliveries and operations_log, bodies included, and
	// deliveriesDisk and logDisk the sizes of the tables with their
	// indexes on disk, dead rows included until reused (see
	// backend.rowBytes).
	deliveryRows, logRows   int64
	deliveriesDisk, logDisk int64
}

// measureFlood measures what the integration's webhooks left in the Store,
// in the database too when disk is set.
func measureFlood(t *testing.T, bu *bundle, key string, disk bool) floodMeasure {
	t.Helper()
	ctx := t.Context()
	var m floodMeasure
	var err error
	if m.charged, err = bu.b.store.TrimForwards(ctx, bu.env.ID, key, math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	m.forwards = len(bu.deliveries(t, webhooks.DeliveryFilter{Type: webhooks.TypeForward, IntegrationKey: key, Limit: 1000, OmitBody: true}))
	if m.entries, err = bu.svc.ListLogs(ctx, oplog.Filter{EnvironmentID: bu.env.ID, Type: "webhook", IntegrationKey: key, Limit: 1000}); err != nil {
		t.Fatal(err)
	}
	if disk {
		// Rows are measured, not files: how much of its dead rows a
		// VACUUM (even FULL) can drop depends on the snapshots of every
		// other session of the database (the other tests').
		m.deliveryRows, m.deliveriesDisk = bu.b.rowBytes(t, "webhook_deliveries")
		m.logRows, m.logDisk = bu.b.rowBytes(t, "operations_log")
	}
	return m
}

// sampleKey is what the Sampler counts an entry under: its operation and
// outcome.
func sampleKey(e *oplog.Entry) string {
	switch {
	case e.Meta["reason"] != nil:
		return e.Operation + "/" + e.Meta["reason"].(string)
	case e.Operation == "incoming":
		return "incoming/accepted"
	case e.Status == oplog.StatusSuccess:
		return e.Operation + "/delivered"
	case strings.HasSuffix(e.Message, "giving up"):
		return e.Operation + "/given_up"
	}
	return e.Operation + "/retrying"
}

// TestIncomingWebhookFloodStorageBound: floods of anonymous posts to an
// integration whose provider does not sign (notion), of tiny bodies and of
// the largest allowed, while the application takes the forwards (they are
// delivered, then evicted by newer ones), refuses them (they fail, then are
// evicted) or is not reached (the Service is stopped: they stay pending),
// leave at most the documented bound in the Store: forwards charged at
// most StorageQuota (and so no more than StorageQuota / ForwardRowOverhead
// of them, however small), whose rows (measured in the database, bodies
// included) take less, and log entries within sampledOutcomes ×
// (Retention.Logs / LogInterval + 1), each key at most once per interval,
// whose rows take less than maxSampledEntry each. The flood runs in rounds
// one LogInterval apart (the Service's clock is moved, and Retain run,
// between rounds); once at the bound, a flood as long again adds nothing.
func TestIncomingWebhookFloodStorageBound(t *testing.T) {
	t.Parallel()
	const (
		interval  = time.Hour // retention periods are at least an hour
		logs      = 2 * interval
		rounds    = 3 // a flood: rounds × perRound posts
		logBound  = sampledOutcomes * (int(logs/interval) + 1)
		maxBody   = 16 << 10
		tinyQuota = 128 << 10
		maxQuota  = 1 << 20
	)
	// The largest body, of random text: Postgres compresses what it can.
	pad := make([]byte, maxBody)
	rand.Read(pad)
	largest := `{"pad":"` + base64.RawURLEncoding.EncodeToString(pad)[:maxBody-10] + `"}`
	for _, size := range []struct {
		name  string
		body  string
		quota int64
		// perRound posts per round; settle every settleEvery posts, so
		// that the pending forwards alone never fill the quota.
		perRound, settleEvery int
	}{
		{"tiny", `{}`, tinyQuota, 30, 5},
		{"largest", largest, maxQuota, 12, 4},
	} {
		for _, mode := range []string{"receiving", "refusing", "stopped"} {
			t.Run(size.name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				backends(t, func(t *testing.T, b *backend) {
					var received atomic.Int32
					recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						_, _ = io.Copy(io.Discard, r.Body)
						received.Add(1)
						if mode == "refusing" {
							w.WriteHeader(http.StatusInternalServerError)
						}
					}))
					t.Cleanup(recv.Close)
					clock := newRefreshClock()
					bu := setup(t, b, func(c *connect.Config) {
						c.Now = clock.Now
						c.IncomingWebhooks = connect.IncomingWebhooksConfig{MaxBody: maxBody, StorageQuota: size.quota, LogInterval: interval}
						c.Retention = connect.RetentionConfig{Logs: logs}
						// Two attempts, 5 ms apart, then failed.
						c.Webhooks = webhooks.DeliveryConfig{Retries: 1, Backoff: 5 * time.Millisecond, Schedule: []time.Duration{},
							Timeout: 5 * time.Second, PollInterval: 20 * time.Millisecond}
						c.MaintenanceInterval = -1
					})
					urls := []string{recv.URL + "/a", recv.URL + "/b"}
					if _, err := bu.svc.Environments().Update(t.Context(), bu.env.ID, environments.UpdateInput{WebhookURLs: &urls}); err != nil {
						t.Fatal(err)
					}
					bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"notion","unique_key":"notion"}`})
					started := mode != "stopped"
					if started {
						bu.start(t)
					}
					url := bu.srv.URL + "/webhook/dev/notion"
					// The log entries of the setup go first, so that the
					// tables hold only what the flood writes.
					clock.advance(logs + interval)
					if _, err := bu.svc.Retain(t.Context()); err != nil {
						t.Fatal(err)
					}
					before := measureFlood(t, bu, "notion", true)
					accepted := 0
					check := func(when string) {
						t.Helper()
						m := measureFlood(t, bu, "notion", false)
						if m.charged > size.quota {
							t.Fatalf("%s: %d forwards charged %d bytes, over the quota of %d", when, m.forwards, m.charged, size.quota)
						}
						// Charging rows bounds their number however small
						// the bodies.
						if limit := int(size.quota / webhooks.ForwardRowOverhead); m.forwards > limit {
							t.Fatalf("%s: %d forwards kept, more than %d (quota / ForwardRowOverhead)", when, m.forwards, limit)
						}
					}
					flood := func() {
						t.Helper()
						for range rounds {
							for i := range size.perRound {
								status, code, _ := floodPost(t, url, size.body)
								switch {
								case status == 200:
									accepted++
								case !started && status == 429 && code == "webhook_storage_full":
								default:
									t.Fatalf("post %d: %d %s", i, status, code)
								}
								if started && (i+1)%size.settleEvery == 0 {
									bu.settle(t, 0)
								}
							}
							if started {
								bu.settle(t, 0)
							}
							check(fmt.Sprintf("after %d posts", accepted))
							clock.advance(interval)
							if _, err := bu.svc.Retain(t.Context()); err != nil {
								t.Fatal(err)
							}
						}
					}
					flood()
					once := measureFlood(t, bu, "notion", true)
					flood()
					twice := measureFlood(t, bu, "notion", true)

					// The forwards: every accepted post was forwarded to
					// both URLs (and, when the application is reached,
					// attempted), and the oldest evicted; each kept one
					// says what became of it.
					if started {
						if want := int32(2 * accepted); mode == "receiving" && received.Load() != want {
							t.Errorf("the application received %d forwards of %d accepted posts, want %d", received.Load(), accepted, want)
						}
						if twice.forwards >= 2*accepted {
							t.Errorf("%d forwards kept of %d accepted posts: none evicted", twice.forwards, accepted)
						}
					}
					for _, d := range bu.deliveries(t, webhooks.DeliveryFilter{Type: webhooks.TypeForward, Limit: 1000, OmitBody: true}) {
						ok := d.Unverified
						switch mode {
						case "receiving":
							ok = ok && d.Status == webhooks.StatusDelivered && d.Attempts == 1 && d.LastStatusCode == 200
						case "refusing":
							ok = ok && d.Status == webhooks.StatusFailed && d.Attempts == 2 && d.LastStatusCode == 500 && d.LastError == "status 500"
						default:
							ok = ok && d.Status == webhooks.StatusPending && d.Attempts == 0
						}
						if !ok {
							t.Errorf("forward %+v", d)
						}
					}

					// The log: each key at most once per interval, within
					// the documented bound, whatever the number of posts.
					for _, m := range []floodMeasure{once, twice} {
						if len(m.entries) > logBound {
							t.Errorf("%d log entries of the integration's webhooks, over the bound of %d", len(m.entries), logBound)
						}
						last := map[string]time.Time{}
						for i := len(m.entries) - 1; i >= 0; i-- { // oldest first
							e := m.entries[i]
							k := sampleKey(e)
							if at, ok := last[k]; ok && e.CreatedAt.Sub(at) < interval {
								t.Errorf("two %s entries %s apart", k, e.CreatedAt.Sub(at))
							}
							last[k] = e.CreatedAt
							if e.Meta["verified"] == true || e.Operation == "enqueue" {
								t.Errorf("entry of an anonymous post not sampled: %+v", e)
							}
						}
					}
					keys := map[string]int{}
					for _, e := range twice.entries {
						keys[sampleKey(e)]++
					}
					t.Logf("%d posts accepted, %d forwards kept, charged %d bytes (quota %d); %d log entries kept: %v",
						accepted, twice.forwards, twice.charged, size.quota, len(twice.entries), keys)

					// Doubling the flood grows nothing.
					if twice.charged > once.charged || twice.forwards > once.forwards || len(twice.entries) > len(once.entries) {
						t.Errorf("a flood as long again grew the Store: forwards %d (%d bytes) then %d (%d bytes); log entries %d then %d",
							once.forwards, once.charged, twice.forwards, twice.charged, len(once.entries), len(twice.entries))
					}
					// In the database: the rows kept (their bodies
					// included) grow by no more than the bounds, and the
					// forwards not at all with a flood as long again. (What they take
					// on disk with their index entries is within their
					// charge on Postgres: see TestForwardChargeCoversRowCost
					// in store/postgres. The files also hold dead rows, or
					// free pages, until new rows reuse their space.)
					logRowsBound := int64(logBound) * maxSampledEntry
					for i, m := range []floodMeasure{once, twice} {
						grown, logGrown := m.deliveryRows-before.deliveryRows, m.logRows-before.logRows
						t.Logf("after flood %d: rows of webhook_deliveries grew by %d bytes (quota %d), of operations_log by %d (bound %d); "+
							"the tables' files by %d and %d bytes", i+1, grown, size.quota, logGrown, logRowsBound,
							m.deliveriesDisk-before.deliveriesDisk, m.logDisk-before.logDisk)
						if grown > size.quota {
							t.Errorf("after flood %d: the rows of webhook_deliveries grew by %d bytes, over the quota of %d", i+1, grown, size.quota)
						}
						if logGrown > logRowsBound {
							t.Errorf("after flood %d: the rows of operations_log grew by %d bytes, over the bound of %d", i+1, logGrown, logRowsBound)
						}
					}
					// (The log keeps as many entries; their sizes vary with
					// their counts of suppressed entries.)
					if twice.deliveryRows > once.deliveryRows {
						t.Errorf("a flood as long again grew the rows of webhook_deliveries: %d then %d bytes",
							once.deliveryRows, twice.deliveryRows)
					}
				})
			})
		}
	}
}
