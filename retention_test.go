package connect_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/webhooks"
)

// TestRecordRetention: payloads of records not updated for 30 days are
// pruned; the records of a sync not run for 60 days are deleted.
func TestRecordRetention(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		var offset atomic.Int64 // moves the Service's clock ahead of the real one
		f := setupSyncConfig(t, b, func(c *connect.Config) {
			c.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		}, issueSync(nil, false, "1h", false))
		start := time.Now()
		f.mustDo(t, 200, req{method: "POST", path: "/sync/trigger", body: `{"syncs":["issues"],"provider_config_key":"fx"}`})
		f.waitRun(t, "issues", start)
		// The sync stays paused (no auto start): no run refreshes the records.
		// The Service stops: its own retention job, which its loop queues
		// when the clock moves on, would otherwise share the work with the
		// passes this test counts.
		ctx := context.Background()
		if err := f.svc.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		res, err := f.svc.Functions().Retain(ctx)
		if err != nil || res.PayloadsPruned != 0 || res.RecordsDeleted != 0 {
			t.Fatalf("retention at once: %+v, %v", res, err)
		}
		offset.Store(int64(31 * 24 * time.Hour))
		res, err = f.svc.Functions().Retain(ctx)
		if err != nil || res.PayloadsPruned != 250 || res.RecordsDeleted != 0 {
			t.Fatalf("retention after 31 days: %+v, %v", res, err)
		}
		recs := f.records(t, "")
		if len(recs) != 250 || recs[0]["title"] != nil || recs[0]["_nango_metadata"].(map[string]any)["pruned_at"] == nil {
			t.Fatalf("after 31 days: %d records, first %v", len(recs), recs[0])
		}
		offset.Store(int64(61 * 24 * time.Hour))
		res, err = f.svc.Functions().Retain(ctx)
		if err != nil || res.RecordsDeleted != 250 || res.StaleSyncsFound != 1 {
			t.Fatalf("retention after 61 days: %+v, %v", res, err)
		}
		if st := f.status(t, "issues")[0]; st["recordCount"].(map[string]any)["Issue"] != float64(0) {
			t.Fatalf("records after 61 days: %v", st["recordCount"])
		}
	})
}

// retentionClock is a Service clock that tests move forward while the
// Service's background work reads it.
type retentionClock struct{ offset atomic.Int64 }

var retentionStart = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func (c *retentionClock) Now() time.Time     { return retentionStart.Add(time.Duration(c.offset.Load())) }
func (c *retentionClock) at(d time.Duration) { c.offset.Store(int64(d)) }

// storedDelivery is a delivery of env created at retentionStart, in the
// state given, its final state (or last attempt) final after it.
func storedDelivery(env int64, id, status string, final time.Duration) *webhooks.Delivery {
	created := retentionStart
	updated := created.Add(final)
	d := &webhooks.Delivery{ID: id, EnvironmentID: env, EventID: "evt-" + id, Type: webhooks.TypeAuth,
		IntegrationKey: "gh", ConnectionID: "c1", URL: "https://hooks.example.com/in", Body: []byte(`{"type":"auth"}`),
		Status: status, Attempts: 1, CreatedAt: created, UpdatedAt: updated, NextAttemptAt: updated}
	if status == webhooks.StatusDelivered {
		d.DeliveredAt, d.LastStatusCode = &updated, 200
	}
	return d
}

// deliveryIDsOf lists the IDs of the environment's deliveries, sorted.
func deliveryIDsOf(t *testing.T, svc *connect.Service, env int64) []string {
	t.Helper()
	ds, err := svc.ListWebhookDeliveries(t.Context(), webhooks.DeliveryFilter{EnvironmentID: env, Limit: 1000, OmitBody: true})
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, d := range ds {
		out = append(out, d.ID)
	}
	slices.Sort(out)
	return out
}

// logIDs lists the IDs of every operations log entry, sorted.
func logIDs(t *testing.T, svc *connect.Service) []string {
	t.Helper()
	es, err := svc.ListLogs(t.Context(), oplog.Filter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, e := range es {
		out = append(out, e.ID)
	}
	slices.Sort(out)
	return out
}

// TestRetention: with the default periods, finished webhook deliveries go 30
// days after their final state and log entries 15 days after they were
// written, by the Service's clock; pending deliveries stay, whatever their
// age.
func TestRetention(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		clock := &retentionClock{}
		bu := setup(t, b, func(c *connect.Config) { c.Now = clock.Now })
		ctx := t.Context()
		const day = 24 * time.Hour
		if err := b.store.CreateDeliveries(ctx,
			storedDelivery(bu.env.ID, "delivered-day0", webhooks.StatusDelivered, 0),
			storedDelivery(bu.env.ID, "failed-day1", webhooks.StatusFailed, day),
			storedDelivery(bu.env.ID, "pending-day0", webhooks.StatusPending, 0),
			storedDelivery(bu.env.ID, "delivered-day5", webhooks.StatusDelivered, 5*day),
		); err != nil {
			t.Fatal(err)
		}
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"gh"}`})
		day0 := logIDs(t, bu.svc)
		clock.at(2 * day)
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"slack","unique_key":"sl"}`})
		all := logIDs(t, bu.svc)
		day2 := slices.DeleteFunc(slices.Clone(all), func(id string) bool { return slices.Contains(day0, id) })
		if len(day0) == 0 || len(day2) == 0 {
			t.Fatalf("log entries: %d on day 0, %d on day 2", len(day0), len(day2))
		}

		retain := func(at time.Duration, want connect.RetentionResult, deliveries, logs []string) {
			t.Helper()
			clock.at(at)
			res, err := bu.svc.Retain(ctx)
			if err != nil || res != want {
				t.Fatalf("Retain at day %v = %+v, %v; want %+v", at/day, res, err, want)
			}
			if got := deliveryIDsOf(t, bu.svc, bu.env.ID); !slices.Equal(got, deliveries) {
				t.Errorf("deliveries at day %v: %v, want %v", at/day, got, deliveries)
			}
			if got := logIDs(t, bu.svc); !slices.Equal(got, logs) {
				t.Errorf("log entries at day %v: %v, want %v", at/day, got, logs)
			}
		}
		everything := []string{"delivered-day0", "delivered-day5", "failed-day1", "pending-day0"}
		retain(10*day, connect.RetentionResult{}, everything, all)
		// Day 0's entries are 15 days old one second later.
		retain(15*day, connect.RetentionResult{}, everything, all)
		retain(15*day+time.Second, connect.RetentionResult{LogsDeleted: len(day0)}, everything, day2)
		retain(17*day+time.Second, connect.RetentionResult{LogsDeleted: len(day2)}, everything, []string{})
		retain(30*day+time.Second, connect.RetentionResult{DeliveriesDeleted: 1},
			[]string{"delivered-day5", "failed-day1", "pending-day0"}, []string{})
		retain(35*day+time.Second, connect.RetentionResult{DeliveriesDeleted: 2}, []string{"pending-day0"}, []string{})
		retain(3650*day, connect.RetentionResult{}, []string{"pending-day0"}, []string{})
	})
}

// TestRetentionConfigured: the periods are configurable, a negative one
// keeps forever, and periods that look like a mistake are refused.
func TestRetentionConfigured(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		clock := &retentionClock{}
		bu := setup(t, b, func(c *connect.Config) {
			c.Now = clock.Now
			c.Retention = connect.RetentionConfig{WebhookDeliveries: 48 * time.Hour, Logs: -1}
		})
		ctx := t.Context()
		if err := b.store.CreateDeliveries(ctx,
			storedDelivery(bu.env.ID, "delivered", webhooks.StatusDelivered, 0),
			storedDelivery(bu.env.ID, "failed", webhooks.StatusFailed, 24*time.Hour),
		); err != nil {
			t.Fatal(err)
		}
		bu.mustDo(t, 200, req{method: "POST", path: "/integrations", body: `{"provider":"github","unique_key":"gh"}`})
		logs := logIDs(t, bu.svc)
		if len(logs) == 0 {
			t.Fatal("no log entries to keep")
		}
		clock.at(48*time.Hour + time.Second)
		res, err := bu.svc.Retain(ctx)
		if err != nil || res != (connect.RetentionResult{DeliveriesDeleted: 1}) {
			t.Fatalf("Retain after 2 days = %+v, %v", res, err)
		}
		if got := deliveryIDsOf(t, bu.svc, bu.env.ID); !slices.Equal(got, []string{"failed"}) {
			t.Errorf("deliveries after 2 days: %v", got)
		}
		clock.at(10 * 365 * 24 * time.Hour)
		if res, err := bu.svc.Retain(ctx); err != nil || res != (connect.RetentionResult{DeliveriesDeleted: 1}) {
			t.Fatalf("Retain after 10 years = %+v, %v", res, err)
		}
		if got := logIDs(t, bu.svc); !slices.Equal(got, logs) {
			t.Errorf("log entries kept forever: %v, want %v", got, logs)
		}
	})
	for _, r := range []connect.RetentionConfig{{WebhookDeliveries: 30}, {Logs: time.Minute}} {
		cfg := baseConfig(t)
		cfg.Retention = r
		_, err := connect.New(cfg)
		if err == nil || !strings.Contains(err.Error(), "Retention") {
			t.Errorf("New with Retention %+v: %v", r, err)
		}
	}
}

// TestRetentionRunsAsJob: a maintenance sweep of a started Service queues
// the retention job, which the Scheduler runs.
func TestRetentionRunsAsJob(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		clock := &retentionClock{}
		bu := hookSetup(t, b, nil, func(c *connect.Config) {
			c.Now = clock.Now
			c.MaintenanceInterval = -1 // no sweeps but the test's
		})
		if err := b.store.CreateDeliveries(t.Context(), storedDelivery(bu.env.ID, "old", webhooks.StatusDelivered, 0)); err != nil {
			t.Fatal(err)
		}
		if len(logIDs(t, bu.svc)) == 0 {
			t.Fatal("no log entries")
		}
		clock.at(31 * 24 * time.Hour)
		if _, err := bu.svc.Sweep(t.Context(), time.Minute); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "the retention job", func() bool {
			es, err := bu.svc.ListLogs(t.Context(), oplog.Filter{Until: clock.Now().Add(-15 * 24 * time.Hour), Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			return len(es) == 0 && len(deliveryIDsOf(t, bu.svc, bu.env.ID)) == 0
		})
	})
}
