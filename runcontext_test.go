package connect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/proxy"
	"github.com/embedauth/connect/store"
)

// TestSyncContextRecords: a sync's records through its run context:
// Update merges, Delete soft-deletes, Get and List read back, and the
// limits refuse what they must with a clear error.
func TestSyncContextRecords(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		type note struct {
			ID   string         `json:"id"`
			Body string         `json:"body"`
			Meta map[string]any `json:"meta,omitempty"`
		}
		checks := make(chan error, 1)
		s := functions.Sync{Integration: "fx", Name: "notes", Frequency: "1h",
			Models: []functions.Model{functions.ModelOf[note]("Note")},
			Run: func(ctx context.Context, s *functions.SyncContext) error {
				checks <- func() error {
					if err := s.Save(ctx, "Note", []note{{ID: "a", Body: "x", Meta: map[string]any{"k": "v", "n": 1}}, {ID: "b", Body: "y"}, {ID: "c", Body: "z"}}); err != nil {
						return err
					}
					if err := s.Update(ctx, "Note", []map[string]any{{"id": "a", "meta": map[string]any{"n": 2}}, {"id": "zz", "body": "nope"}}); err != nil {
						return err
					}
					if err := s.Delete(ctx, "Note", "b", "unknown"); err != nil {
						return err
					}
					got, err := s.Get(ctx, "Note", []string{"a", "b", "zz"})
					if err != nil {
						return err
					}
					if len(got) != 1 {
						return fmt.Errorf("Get returned %d records, want only a", len(got))
					}
					var a note
					if err := json.Unmarshal(got["a"], &a); err != nil {
						return err
					}
					if a.Body != "x" || a.Meta["k"] != "v" || a.Meta["n"] != float64(2) {
						return fmt.Errorf("a after the deep merge: %+v", a)
					}
					var listed []string
					for rec, err := range s.List(ctx, "Note") {
						if err != nil {
							return err
						}
						var n note
						_ = json.Unmarshal(rec, &n)
						listed = append(listed, n.ID)
					}
					if strings.Join(listed, ",") != "c,a" {
						return fmt.Errorf("List = %v, want c then a (the latest change last; b deleted)", listed)
					}
					// Limits.
					var e *store.Error
					tooMany := make([]note, functions.MaxRecordsPerBatch+1)
					for i := range tooMany {
						tooMany[i] = note{ID: fmt.Sprint(i)}
					}
					for name, err := range map[string]error{
						"more than 1,000": s.Save(ctx, "Note", tooMany),
						"long id":         s.Save(ctx, "Note", []note{{ID: strings.Repeat("i", 256)}}),
						"no id":           s.Save(ctx, "Note", []map[string]any{{"body": "x"}}),
						"not an object":   s.Save(ctx, "Note", []string{"x"}),
						"undeclared":      s.Save(ctx, "Other", []note{{ID: "x"}}),
					} {
						if !errors.As(err, &e) || e.Code != "invalid_sync_record" {
							return fmt.Errorf("%s: %v, want invalid_sync_record", name, err)
						}
					}
					if err := s.Save(ctx, "Note", []note{{ID: strings.Repeat("i", 255)}}); err != nil {
						return fmt.Errorf("a 255-character id: %v", err)
					}
					return nil
				}()
				return nil
			}}
		f := setupSync(t, b, s)
		f.mustDo(t, 200, req{method: "POST", path: "/sync/trigger", body: `{"syncs":["notes"],"provider_config_key":"fx"}`})
		select {
		case err := <-checks:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the sync did not run")
		}
	})
}

// TestRunContext: the rest of the run context: the connection with its
// credentials, metadata, environment variables, an HTTP client for SDKs,
// logs under the run's entry, and the run's deadline.
func TestRunContext(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		var apiURL atomic.Value // the provider's base URL, known once set up
		f := setupFunctions(t, b, func(svc *connect.Service) {
			err := svc.Functions().Register(
				functions.NewAction("fx", "inspect", func(ctx context.Context, c *functions.Context, in struct{}) (map[string]any, error) {
					conn, err := c.Connection(ctx)
					if err != nil {
						return nil, err
					}
					if err := c.SetMetadata(ctx, map[string]any{"a": 1, "b": 2}); err != nil {
						return nil, err
					}
					if err := c.UpdateMetadata(ctx, map[string]any{"b": 3}); err != nil {
						return nil, err
					}
					md, err := c.Metadata(ctx)
					if err != nil {
						return nil, err
					}
					vars, err := c.EnvironmentVariables(ctx)
					if err != nil {
						return nil, err
					}
					resp, err := c.HTTPClient(proxy.Options{}).Get(apiURL.Load().(string) + "/through-the-client")
					if err != nil {
						return nil, err
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err := c.Log(ctx, slog.LevelInfo, "inspected", "connection", c.ConnectionID); err != nil {
						return nil, err
					}
					return map[string]any{"key": conn.Credentials.APIKey, "metadata": md, "vars": vars, "sdk": string(body),
						"log_id": c.LogID}, nil
				}),
			)
			if err != nil {
				t.Fatal(err)
			}
		})
		apiURL.Store(f.api.srv.URL)
		if err := f.svc.Environments().SetVariables(context.Background(), f.env.ID, map[string]string{"REGION": "eu"}); err != nil {
			t.Fatal(err)
		}
		r := f.mustDo(t, 200, actionReq("inspect", "", nil))
		got := r.obj()
		md, _ := got["metadata"].(map[string]any)
		vars, _ := got["vars"].(map[string]any)
		if got["key"] != "sk-1" || md["a"] != float64(1) || md["b"] != float64(3) || vars["REGION"] != "eu" ||
			!strings.Contains(got["sdk"].(string), "/through-the-client") {
			t.Fatalf("inspect answered %s", r.raw)
		}
		last := f.api.requests()[len(f.api.requests())-1]
		if last.Header.Get("X-Api-Key") != "sk-1" {
			t.Errorf("the SDK client's request carried X-Api-Key %q", last.Header.Get("X-Api-Key"))
		}
		// The run's log entry and the function's own, under it.
		logID := got["log_id"].(string)
		waitFor(t, 10*time.Second, "the run's log entries", func() bool {
			es, err := f.svc.ListLogs(context.Background(), oplog.Filter{EnvironmentID: f.env.ID, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var run, own bool
			for _, e := range es {
				run = run || (e.ID == logID && e.Operation == "run" && e.Status == oplog.StatusSuccess)
				own = own || (e.Message == "inspected" && e.Meta["run_log_id"] == logID)
			}
			return run && own
		})
	})
}

// TestRunDeadline: a run that outlives Config.Functions.ActionTimeout is
// cut off and answered execution_timeout. It has a Service of its own:
// under the short timeout, any other action could time out on a busy
// machine.
func TestRunDeadline(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		f := setupFunctions(t, b, func(svc *connect.Service) {
			err := svc.Functions().Register(functions.NewAction("fx", "slow", func(ctx context.Context, c *functions.Context, in struct{}) (any, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}))
			if err != nil {
				t.Fatal(err)
			}
		}, func(c *connect.Config) { c.Functions.ActionTimeout = 200 * time.Millisecond })
		r := f.mustDo(t, 500, actionReq("slow", "", nil))
		if r.errCode() != "execution_timeout" {
			t.Fatalf("slow answered %s", r.raw)
		}
	})
}

// TestRunContextPaginatePages: through the proxy, each page comes with its
// next-page link; an iteration resumed from an absolute link to the
// provider's host goes on from there, and one resumed from a link to
// another host is refused before any request.
func TestRunContextPaginatePages(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		var base atomic.Value // the provider's base URL, known once set up
		pages := func(w http.ResponseWriter, r *http.Request) {
			n, _ := strconv.Atoi(r.URL.Query().Get("page"))
			if r.URL.Path != "/items" || n < 1 || n > 3 {
				http.NotFound(w, r)
				return
			}
			if n < 3 {
				w.Header().Set("Link", fmt.Sprintf(`<%s/items?page=%d>; rel="next"`, base.Load(), n+1))
			}
			fmt.Fprintf(w, `[{"id":"i%d"}]`, n)
		}
		f := setupFunctionsAPI(t, b, func(svc *connect.Service) {
			err := svc.Functions().Register(functions.NewAction("fx", "pages",
				func(ctx context.Context, c *functions.Context, in struct {
					From any `json:",omitempty"` // absent on the first call: start at the first page
				}) (map[string]any, error) {
					var ids, next []any
					p := &integrations.Paginate{Type: integrations.PaginateLink, LinkRelInResponseHeader: "next"}
					for page, err := range c.PaginatePages(ctx, functions.ProxyRequest{Endpoint: "/items", Params: url.Values{"page": {"1"}}}, p, in.From) {
						if err != nil {
							return nil, err
						}
						for _, raw := range page.Records {
							var rec struct{ ID string }
							if err := json.Unmarshal(raw, &rec); err != nil {
								return nil, err
							}
							ids = append(ids, rec.ID)
						}
						next = append(next, page.NextPageParam)
					}
					return map[string]any{"ids": ids, "next": next}, nil
				}))
			if err != nil {
				t.Fatal(err)
			}
		}, pages)
		base.Store(f.api.srv.URL)
		link := func(n int) string { return fmt.Sprintf("%s/items?page=%d", f.api.srv.URL, n) }

		r := f.mustDo(t, 200, actionReq("pages", `{}`, nil))
		want := fmt.Sprintf(`{"ids":["i1","i2","i3"],"next":[%q,%q,null]}`, link(2), link(3))
		if got := strings.TrimSpace(string(r.raw)); got != want {
			t.Fatalf("pages answered %s, want %s", got, want)
		}
		r = f.mustDo(t, 200, actionReq("pages", fmt.Sprintf(`{"From":%q}`, link(3)), nil))
		if got, want := strings.TrimSpace(string(r.raw)), `{"ids":["i3"],"next":[null]}`; got != want {
			t.Errorf("resumed at page 3: %s, want %s", got, want)
		}
		before := len(f.api.requests())
		elsewhere := strings.Replace(link(2), "127.0.0.1", "localhost", 1)
		r = f.mustDo(t, 500, actionReq("pages", fmt.Sprintf(`{"From":%q}`, elsewhere), nil))
		if !strings.Contains(string(r.raw), "another host than the provider") {
			t.Errorf("resumed from another host: %s", r.raw)
		}
		if n := len(f.api.requests()) - before; n != 0 {
			t.Errorf("resuming from another host made %d requests", n)
		}
	})
}
