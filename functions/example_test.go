package functions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store/sqlite"
)

// An action registered in Go calls the provider through the connection's
// credentials and answers a typed output; the host triggers it from Go as
// POST /action/trigger would.
func ExampleNewAction() {
	// A provider API that greets whoever holds the key "sk-1".
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "sk-1" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"greeting":"hello, %s"}`, r.URL.Query().Get("name"))
	}))
	defer api.Close()
	svc, env, closeDB := exampleService("greeter", &integrations.Proxy{BaseURL: api.URL, Headers: map[string]string{"X-Api-Key": "${apiKey}"}})
	defer closeDB()

	type In struct {
		Name string `json:"name"`
	}
	type Out struct {
		Greeting string `json:"greeting"`
	}
	err := svc.Functions().Register(functions.NewAction("greeter", "greet",
		func(ctx context.Context, c *functions.Context, in In) (Out, error) {
			var out Out
			resp, err := c.Proxy(ctx, functions.ProxyRequest{Endpoint: "/greet", Params: map[string][]string{"name": {in.Name}}})
			if err != nil {
				return out, err
			}
			return out, resp.JSON(&out)
		}))
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	if _, _, err := svc.Connections().Import(ctx, env.ID, connections.ImportInput{ProviderConfigKey: "greeter",
		ConnectionID: "user-1", APIKey: "sk-1"}); err != nil {
		panic(err)
	}
	var out Out
	if err := svc.Functions().TriggerAction(ctx, env.ID, "greeter", "user-1", "greet", In{Name: "Ada"}, &out); err != nil {
		panic(err)
	}
	fmt.Println(out.Greeting)

	// An input that does not fit In's schema is refused before the action
	// runs, in JSON's terms.
	_, err = svc.Functions().RunAction(ctx, functions.ActionCall{EnvironmentID: env.ID, Integration: "greeter",
		ConnectionID: "user-1", Action: "greet", Input: json.RawMessage(`{"name":5}`)})
	var re *functions.RunError
	if errors.As(err, &re) {
		fmt.Println(re.Failure.Status, re.Failure.Body.Error.Code)
		fmt.Println(re.Failure.Body.Error.Message)
	}
	// Output:
	// hello, Ada
	// 400 invalid_action_input
	// The action input is invalid: input.name: expected string, got number.
}

// An action that fails on purpose returns an *ActionError: its Type comes
// first in the payload of the 500 action_script_runtime_error answer, as
// in the payloads of Nango's functions.
func ExampleActionError() {
	err := &functions.ActionError{Type: "not_found", Payload: map[string]any{"message": "User not found", "user_id": "u-7"}}
	f := functions.Classify(err)
	body, _ := json.Marshal(f.Body)
	fmt.Println(f.Status, string(body))
	// Output: 500 {"error":{"message":"The action script failed with a runtime error","code":"action_script_runtime_error","payload":{"type":"not_found","message":"User not found","user_id":"u-7"}}}
}

// A provider call that gets no answer is answered as the proxy answers
// it, whether it went through Context.Proxy or a client of
// Context.HTTPClient: the answer names neither the address nor the dial
// error, which the run's operations log entry keeps (Meta
// "error_detail").
func ExampleClassify_providerUnreachable() {
	// What a client of Context.HTTPClient returns when nothing listens at
	// the provider's address, wrapped by the function.
	err := &url.Error{Op: "Get", URL: "http://10.0.0.5:8080/users", Err: &net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 8080}, Err: syscall.ECONNREFUSED}}
	f := functions.Classify(fmt.Errorf("list the users: %w", err))
	body, _ := json.Marshal(f.Body)
	fmt.Println(f.Status, string(body))
	// Output: 502 {"error":{"message":"The upstream failed: could not reach the provider.","code":"upstream_error"}}
}

// A sync that checkpoints after each page: it saves the page's records,
// then the page's next-page parameter, and a later run resumes from that
// checkpoint instead of the first page. Here the provider fails on the
// third page; the next run asks for that page and no other.
func ExampleContext_PaginatePages() {
	type Item struct {
		ID string `json:"id"`
	}
	// A provider listing 6 items, 2 a page: GET /items?cursor=N answers
	// {"items":[...],"next":"N+2"}; the first request for cursor 4 fails.
	var (
		mu      sync.Mutex
		cursors []string
		failed  bool
	)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		cur := r.URL.Query().Get("cursor")
		cursors = append(cursors, cur)
		if cur == "4" && !failed {
			failed = true
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		start, _ := strconv.Atoi(cur)
		body := map[string]any{"items": []Item{{ID: strconv.Itoa(start)}, {ID: strconv.Itoa(start + 1)}}}
		if start+2 < 6 {
			body["next"] = strconv.Itoa(start + 2)
		}
		json.NewEncoder(w).Encode(body)
	}))
	defer api.Close()
	askedFor := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := cursors
		cursors = nil
		return out
	}

	// The provider's catalogue entry says how its lists are paged.
	svc, env, closeDB := exampleService("lister", &integrations.Proxy{BaseURL: api.URL, Headers: map[string]string{"X-Api-Key": "${apiKey}"},
		Paginate: &integrations.Paginate{Type: integrations.PaginateCursor, CursorNameInRequest: "cursor",
			CursorPathInResponse: "next", ResponsePath: "items"}})
	defer closeDB()
	err := svc.Functions().Register(functions.Sync{Integration: "lister", Name: "items", Frequency: "every hour", AutoStart: true,
		Models: []functions.Model{functions.ModelOf[Item]("Item")},
		Run: func(ctx context.Context, s *functions.SyncContext) error {
			cp, err := s.Checkpoint(ctx)
			if err != nil {
				return err
			}
			// cp["cursor"] is nil on the first run: start at the first page.
			for page, err := range s.PaginatePages(ctx, functions.ProxyRequest{Endpoint: "/items"}, nil, cp["cursor"]) {
				if err != nil {
					return err // the checkpoint stays where the last page left it
				}
				items := make([]Item, len(page.Records))
				for i, raw := range page.Records {
					if err := json.Unmarshal(raw, &items[i]); err != nil {
						return err
					}
				}
				if err := s.Save(ctx, "Item", items); err != nil {
					return err
				}
				if page.NextPageParam != nil {
					if err := s.SaveCheckpoint(ctx, functions.Checkpoint{"cursor": page.NextPageParam}); err != nil {
						return err
					}
				}
			}
			return s.ClearCheckpoint(ctx) // complete: the next run starts over
		}})
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	if err := svc.Start(ctx); err != nil {
		panic(err)
	}
	defer svc.Stop(ctx)
	// The new connection's sync runs at once.
	if _, _, err := svc.Connections().Import(ctx, env.ID, connections.ImportInput{ProviderConfigKey: "lister",
		ConnectionID: "user-1", APIKey: "sk-1"}); err != nil {
		panic(err)
	}
	target := functions.SyncTarget{EnvironmentID: env.ID, Integration: "lister", ConnectionID: "user-1",
		Syncs: []functions.SyncRef{{Name: "items"}}}
	waitFor := func(status string) functions.SyncStatus {
		for {
			st, err := svc.Functions().Status(ctx, target)
			if err != nil {
				panic(err)
			}
			if st[0].Status == status && st[0].FinishedAt != nil {
				return st[0]
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	st := waitFor(functions.StatusError)
	fmt.Println("first run:", st.Status, st.RecordCount["Item"], "items, checkpoint", st.Checkpoint, "cursors", askedFor())
	if err := svc.Functions().TriggerSync(ctx, target, functions.TriggerOptions{}); err != nil {
		panic(err)
	}
	st = waitFor(functions.StatusSuccess)
	fmt.Println("next run:", st.Status, st.RecordCount["Item"], "items, checkpoint", st.Checkpoint, "cursors", askedFor())
	// Output:
	// first run: ERROR 4 items, checkpoint map[cursor:4] cursors [ 2 4]
	// next run: SUCCESS 6 items, checkpoint map[] cursors [4]
}

// exampleService returns a Service on a private in-memory SQLite
// database (close it after the Service has stopped) whose catalogue has
// an API-key provider of that name with the given proxy settings (its
// calls allowed to loopback addresses, where the examples' fake APIs
// listen), and an environment with an integration of the same name.
func exampleService(name string, px *integrations.Proxy) (svc *connect.Service, env *environments.Environment, closeDB func()) {
	cat, _ := integrations.DefaultCatalog()
	cat, _ = cat.With(&integrations.Provider{Name: name, DisplayName: name, AuthMode: integrations.AuthModeAPIKey,
		Credentials: map[string]integrations.FieldSpec{"apiKey": {Type: "string", Title: "API key"}}, Proxy: px})
	db, err := sqlite.Connect(context.Background(), sqlite.MemoryPath, nil)
	if err != nil {
		panic(err)
	}
	svc, err = connect.New(connect.Config{
		Store:          db.Store,
		Scheduler:      db.Scheduler,
		EncryptionKeys: []connect.EncryptionKey{{Key: bytes.Repeat([]byte{1}, 32)}},
		Providers:      cat,
		Egress:         egress.Policy{AllowLoopback: true},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	env, err = svc.Environments().Create(ctx, environments.CreateInput{Name: "dev"})
	if err != nil {
		panic(err)
	}
	if _, err := svc.Integrations().Create(ctx, env.ID, integrations.CreateInput{Provider: name, UniqueKey: name}); err != nil {
		panic(err)
	}
	return svc, env, func() { db.Close() }
}
