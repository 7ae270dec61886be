package connect_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
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
