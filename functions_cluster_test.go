package connect_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store/postgres"
)

// fnInstance is one process of a fleet running functions on one Postgres
// schema: its own Store, River scheduler and Service, with the
// functions register adds.
func fnInstance(t *testing.T, b *backend, cat *integrations.Catalog, register func(svc *connect.Service)) *connect.Service {
	t.Helper()
	opts := &postgres.Options{Schema: b.schema}
	st, err := postgres.New(b.db, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sched, err := postgres.NewScheduler(b.db, opts, postgres.SchedulerConfig{Workers: 20,
		FetchPollInterval: 20 * time.Millisecond, CancelGrace: 200 * time.Millisecond,
		Test: postgres.SchedulerTestConfig{DisableStaggeredStart: true}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := connect.New(connect.Config{Store: st, EncryptionKeys: []connect.EncryptionKey{testKey}, Scheduler: sched,
		Providers: cat, Egress: egress.Policy{AllowLoopback: true},
		Functions: connect.FunctionsConfig{TickInterval: 20 * time.Millisecond, Heartbeat: 50 * time.Millisecond,
			RetryBackoff: func(int) time.Duration { return 10 * time.Millisecond }}})
	if err != nil {
		t.Fatal(err)
	}
	register(svc)
	return svc
}

func startInstance(t *testing.T, svc *connect.Service) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = svc.Stop(ctx)
	})
}

// clusterCatalog is the default catalogue with fx-api on the fake API.
func clusterCatalog(t *testing.T, api *fnAPI) *integrations.Catalog {
	t.Helper()
	cat, err := integrations.DefaultCatalog()
	if err != nil {
		t.Fatal(err)
	}
	cat, err = cat.With(&integrations.Provider{Name: "fx-api", DisplayName: "FX API", AuthMode: integrations.AuthModeAPIKey,
		Credentials: map[string]integrations.FieldSpec{"apiKey": {Type: "string", Title: "API key"}},
		Proxy:       &integrations.Proxy{BaseURL: api.srv.URL, Headers: map[string]string{"X-Api-Key": "${apiKey}"}}})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// TestSyncsRunOnceAcrossInstances: two instances ticking on one database
// start each due run once.
func TestSyncsRunOnceAcrossInstances(t *testing.T) {
	b := postgresBackend(t)
	api := newFnAPI(t)
	cat := clusterCatalog(t, api)
	var mu sync.Mutex
	runs := map[string]int{}
	fn := functions.Sync{Integration: "fx", Name: "tick", Frequency: "1h", AutoStart: true,
		Models: []functions.Model{functions.ModelOf[issue]("Issue")},
		Run: func(ctx context.Context, s *functions.SyncContext) error {
			mu.Lock()
			runs[s.ConnectionID]++
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			return s.Save(ctx, "Issue", []issue{{ID: "1", Title: s.ConnectionID}})
		}}
	reg := func(svc *connect.Service) {
		if err := svc.Functions().Register(fn); err != nil {
			t.Fatal(err)
		}
	}
	a, c := fnInstance(t, b, cat, reg), fnInstance(t, b, cat, reg)
	ctx := context.Background()
	env, err := a.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "fx-api", UniqueKey: "fx"}); err != nil {
		t.Fatal(err)
	}
	const n = 60
	ins := make([]connections.ImportInput, n)
	for i := range ins {
		ins[i] = connections.ImportInput{ProviderConfigKey: "fx", ConnectionID: fmt.Sprintf("c%02d", i),
			Credentials: &connections.Credentials{Type: integrations.AuthModeAPIKey, APIKey: "k"}}
	}
	if _, err := a.Connections().ImportBatch(ctx, env.ID, ins); err != nil {
		t.Fatal(err)
	}
	startInstance(t, a)
	startInstance(t, c)
	waitFor(t, 30*time.Second, "a run per connection", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(runs) == n
	})
	time.Sleep(300 * time.Millisecond) // time for a second run, were there one
	mu.Lock()
	defer mu.Unlock()
	for id, k := range runs {
		if k != 1 {
			t.Errorf("connection %s: %d runs, want 1", id, k)
		}
	}
}

// TestAsyncActionSurvivesItsInstance: an async action whose instance stops
// answering (its heartbeat ends, its run never returns) is retried by
// another instance, and succeeds there.
func TestAsyncActionSurvivesItsInstance(t *testing.T) {
	b := postgresBackend(t)
	api := newFnAPI(t)
	cat := clusterCatalog(t, api)
	var attempts atomic.Int32
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	reg := func(svc *connect.Service) {
		err := svc.Functions().Register(functions.NewAction("fx", "once", func(ctx context.Context, c *functions.Context, in struct{}) (map[string]int32, error) {
			n := attempts.Add(1)
			if n == 1 {
				<-hang // the first attempt never ends, whatever its context says
			}
			return map[string]int32{"attempt": n}, nil
		}))
		if err != nil {
			t.Fatal(err)
		}
	}
	a := fnInstance(t, b, cat, reg)
	ctx := context.Background()
	env, err := a.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "fx-api", UniqueKey: "fx"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Connections().Import(ctx, env.ID, connections.ImportInput{ProviderConfigKey: "fx", ConnectionID: "c1",
		Credentials: &connections.Credentials{Type: integrations.AuthModeAPIKey, APIKey: "k"}}); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := a.Functions().TriggerActionAsync(ctx, functions.ActionCall{EnvironmentID: env.ID, Integration: "fx",
		ConnectionID: "c1", Action: "once"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the first attempt", func() bool { return attempts.Load() == 1 })
	// The instance stops without its run ending: as if it died.
	stopCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_ = a.Stop(stopCtx)
	cancel()

	c := fnInstance(t, b, cat, reg)
	startInstance(t, c)
	waitFor(t, 30*time.Second, "the result on the other instance", func() bool {
		out, f, err := c.Functions().ActionResult(ctx, env.ID, h.ID)
		if err != nil {
			return false
		}
		if f != nil {
			t.Fatalf("the action failed: %+v", f.Body)
		}
		if !strings.Contains(string(out), `"attempt":2`) {
			t.Fatalf("result %s, want the second attempt's", out)
		}
		return true
	})
	_ = http.StatusOK
}

// TestSyncResumesAfterItsInstanceDies: a sync paging through 25,000
// records with a checkpoint per page loses its instance half-way (its run
// never returns and its heartbeat stops); another instance reports the run
// as interrupted, and the next run resumes from the checkpoint. A run
// after it, with nothing changed, counts nothing.
func TestSyncResumesAfterItsInstanceDies(t *testing.T) {
	b := postgresBackend(t)
	api := newFnAPI(t)
	cat := clusterCatalog(t, api)
	const total, pageSize = 25000, 500
	var firstCursors sync.Map // cursors asked, by instance
	api.setHandle(func(w http.ResponseWriter, r *http.Request) {
		start := 0
		fmt.Sscan(r.URL.Query().Get("cursor"), &start)
		end := min(start+pageSize, total)
		var sb strings.Builder
		sb.WriteString(`{"items":[`)
		for i := start; i < end; i++ {
			if i > start {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"id":"r%05d","title":"record %d"}`, i, i)
		}
		sb.WriteString(`]`)
		if end < total {
			fmt.Fprintf(&sb, `,"next":"%d"`, end)
		}
		sb.WriteString(`}`)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, sb.String())
	})
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	pagesA := atomic.Int32{}
	big := func(instance string) functions.Sync {
		// Not auto-started (its status stays PAUSED): it runs when triggered.
		return functions.Sync{Integration: "fx", Name: "big", Frequency: "1h",
			Models: []functions.Model{functions.ModelOf[issue]("Issue")},
			Run: func(ctx context.Context, s *functions.SyncContext) error {
				cp, err := s.Checkpoint(ctx)
				if err != nil {
					return err
				}
				cursor, _ := cp["cursor"].(string)
				if _, loaded := firstCursors.LoadOrStore(instance+"/"+s.RunID, cursor); loaded {
					return fmt.Errorf("run %s started twice", s.RunID)
				}
				for {
					resp, err := s.Proxy(ctx, functions.ProxyRequest{Endpoint: "/items", Params: map[string][]string{"cursor": {cursor}}})
					if err != nil {
						return err
					}
					var page struct {
						Items []issue `json:"items"`
						Next  string  `json:"next"`
					}
					if err := resp.JSON(&page); err != nil {
						return err
					}
					if err := s.Save(ctx, "Issue", page.Items); err != nil {
						return err
					}
					if page.Next == "" {
						return s.ClearCheckpoint(ctx)
					}
					cursor = page.Next
					if err := s.SaveCheckpoint(ctx, functions.Checkpoint{"cursor": cursor}); err != nil {
						return err
					}
					if instance == "A" && pagesA.Add(1) == 20 {
						<-hang // the instance dies here: nothing of it runs any more
					}
				}
			}}
	}
	a := fnInstance(t, b, cat, func(svc *connect.Service) {
		if err := svc.Functions().Register(big("A")); err != nil {
			t.Fatal(err)
		}
	})
	ctx := context.Background()
	env, err := a.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: "fx-api", UniqueKey: "fx"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Connections().Import(ctx, env.ID, connections.ImportInput{ProviderConfigKey: "fx", ConnectionID: "c1",
		Credentials: &connections.Credentials{Type: integrations.AuthModeAPIKey, APIKey: "k"}}); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	target := functions.SyncTarget{EnvironmentID: env.ID, Integration: "fx", ConnectionID: "c1"}
	if err := a.Functions().TriggerSync(ctx, target, functions.TriggerOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "20 pages on instance A", func() bool { return pagesA.Load() >= 20 })
	stopCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_ = a.Stop(stopCtx)
	cancel()

	c := fnInstance(t, b, cat, func(svc *connect.Service) {
		if err := svc.Functions().Register(big("B")); err != nil {
			t.Fatal(err)
		}
	})
	startInstance(t, c)
	status := func() functions.SyncStatus {
		st, err := c.Functions().Status(ctx, target)
		if err != nil || len(st) != 1 {
			t.Fatalf("Status = %v, %v", st, err)
		}
		return st[0]
	}
	waitFor(t, 30*time.Second, "the interrupted run to be reported", func() bool {
		return status().LatestExecutionStatus == functions.RunStopped
	})
	st := status()
	if st.Status != functions.StatusPaused || st.Checkpoint["cursor"] != "10000" || st.RecordCount["Issue"] != 10000 {
		t.Fatalf("after the instance died: %+v", st)
	}
	// The next run resumes from the checkpoint.
	if err := c.Functions().TriggerSync(ctx, target, functions.TriggerOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the resumed run", func() bool { return status().LatestExecutionStatus == functions.RunSuccess })
	st = status()
	if st.RecordCount["Issue"] != total || st.LatestResult["Issue"].Added != total-10000 || st.Checkpoint != nil {
		t.Fatalf("after the resumed run: %+v", st)
	}
	resumedFrom := ""
	firstCursors.Range(func(k, v any) bool {
		if strings.HasPrefix(k.(string), "B/") {
			resumedFrom = v.(string)
		}
		return true
	})
	if resumedFrom != "10000" {
		t.Fatalf("instance B's run started from cursor %q, want 10000", resumedFrom)
	}
	// Nothing changed: a full run counts nothing.
	finished := st.FinishedAt
	if err := c.Functions().TriggerSync(ctx, target, functions.TriggerOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the unchanged run", func() bool {
		s := status()
		return s.FinishedAt != nil && s.FinishedAt.After(*finished) && s.LatestExecutionStatus == functions.RunSuccess
	})
	if r := status().LatestResult["Issue"]; r != (functions.ModelResult{}) {
		t.Fatalf("an unchanged run of 25,000 records counted %+v", r)
	}
}
