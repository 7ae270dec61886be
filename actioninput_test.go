package connect_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/embedauth/connect"
	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

type issueInput struct {
	Title  string   `json:"title"`
	Labels []string `json:"labels,omitempty"`
	Small  int8     `json:"small,omitempty"`
}

type issueItem struct {
	ID string `json:"id"`
}

// registerInputActions registers actions whose inputs are a struct
// (issue), a scalar (shout) and an array (batch); each counts its runs.
func registerInputActions(t *testing.T, svc *connect.Service, runs *atomic.Int32) {
	t.Helper()
	err := svc.Functions().Register(
		functions.NewAction("fx", "issue", func(_ context.Context, _ *functions.Context, in issueInput) (issueInput, error) {
			runs.Add(1)
			return in, nil
		}),
		functions.NewAction("fx", "shout", func(_ context.Context, _ *functions.Context, in string) (string, error) {
			runs.Add(1)
			return strings.ToUpper(in), nil
		}),
		functions.NewAction("fx", "batch", func(_ context.Context, _ *functions.Context, in []issueItem) (int, error) {
			runs.Add(1)
			return len(in), nil
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
}

// goNames are texts of Go's that no answer of the action path may hold.
var goNames = []string{"Go struct", "Go value", "issueInput", "issueItem", "json:", "unmarshal", "int8", "[]string", "connect_test"}

// TestActionInputIsCheckedAgainstItsSchema: an input that does not fit
// the action's published input schema is answered 400
// invalid_action_input before anything runs, is queued or is logged, for
// sync and X-Async calls alike and through the Go API: the message names
// the path ("input.title: expected string, got number"), the payload
// lists every problem as {path, instancePath, keyword, message} with the
// input model's name, and no answer holds a Go name. An input that passes
// the schema but not the Go type (a number out of an int8's range) is
// answered the same way.
func TestActionInputIsCheckedAgainstItsSchema(t *testing.T) {
	backends(t, func(t *testing.T, b *backend) {
		var runs atomic.Int32
		bu := setupFunctions(t, b, func(svc *connect.Service) { registerInputActions(t, svc, &runs) })
		ctx := context.Background()
		countLogs := func() int {
			t.Helper()
			l, err := bu.svc.ListLogs(ctx, oplog.Filter{EnvironmentID: bu.env.ID, Limit: 10000})
			if err != nil {
				t.Fatal(err)
			}
			return len(l)
		}
		countTasks := func() int { return b.count(t, "action_tasks", "") }
		logsBefore, tasksBefore := countLogs(), countTasks()

		for _, tc := range []struct {
			name, action, input string
			path, message       string
			problems            int
		}{
			{"struct: wrong type", "issue", `{"title":5}`, "input.title", "expected string, got number", 1},
			{"struct: missing", "issue", `{"labels":["a"]}`, "input.title", "is required", 1},
			{"struct: in an array", "issue", `{"title":"t","labels":["a",7]}`, "input.labels[1]", "expected string, got number", 1},
			{"struct: two problems", "issue", `{"labels":"a"}`, "input.title", "is required", 2},
			{"struct: not an object", "issue", `"title"`, "input", "expected object, got string", 1},
			{"scalar", "shout", `{"text":"hi"}`, "input", "expected string, got object", 1},
			{"array: not one", "batch", `{"id":"1"}`, "input", "expected array, got object", 1},
			{"array: an item", "batch", `[{"id":"1"},{"id":2}]`, "input[1].id", "expected string, got number", 1},
		} {
			for _, async := range []bool{false, true} {
				var h map[string]string
				if async {
					h = map[string]string{"X-Async": "true"}
				}
				r := bu.do(t, actionReq(tc.action, tc.input, h))
				what := tc.name
				if async {
					what += " (async)"
				}
				if r.status != 400 || r.errCode() != "invalid_action_input" {
					t.Errorf("%s: %d %s, want 400 invalid_action_input", what, r.status, r.raw)
					continue
				}
				e := r.obj()["error"].(map[string]any)
				if msg, _ := e["message"].(string); !strings.Contains(msg, tc.path+": "+tc.message) {
					t.Errorf("%s: message %q does not say %q", what, msg, tc.path+": "+tc.message)
				}
				p, _ := e["payload"].(map[string]any)
				list, _ := p["validation"].([]any)
				if len(list) != tc.problems || p["model"] != "ActionInput_"+strings.ToUpper(tc.action[:1])+tc.action[1:] {
					t.Errorf("%s: payload %v", what, p)
				} else if first := list[0].(map[string]any); first["path"] != tc.path || first["message"] != tc.message || first["instancePath"] == nil {
					t.Errorf("%s: first problem %v", what, first)
				}
				for _, g := range goNames {
					if strings.Contains(string(r.raw), g) {
						t.Errorf("%s: the answer holds %q: %s", what, g, r.raw)
					}
				}
			}
		}

		// The Go API refuses the same, before running anything.
		_, err := bu.svc.Functions().RunAction(ctx, functions.ActionCall{EnvironmentID: bu.env.ID, Integration: "fx", ConnectionID: "c1",
			Action: "issue", Input: json.RawMessage(`{"title":false}`)})
		var re *functions.RunError
		if !errors.As(err, &re) || re.Failure.Status != 400 || re.Failure.Body.Error.Code != "invalid_action_input" {
			t.Errorf("RunAction: %v", err)
		}
		_, err = bu.svc.Functions().TriggerActionAsync(ctx, functions.ActionCall{EnvironmentID: bu.env.ID, Integration: "fx", ConnectionID: "c1",
			Action: "batch", Input: json.RawMessage(`[1]`)}, 0)
		var se *store.Error
		if !errors.As(err, &se) || !errors.Is(err, store.ErrInvalid) || se.Code != "invalid_action_input" || !strings.Contains(se.Message, "input[0]") {
			t.Errorf("TriggerActionAsync: %v", err)
		}

		if n := runs.Load(); n != 0 {
			t.Errorf("refused inputs ran %d times", n)
		}
		if n := countTasks(); n != tasksBefore {
			t.Errorf("refused async calls stored %d tasks", n-tasksBefore)
		}

		// Past the schema, Go's decoding: 300 is an integer, not an int8.
		r := bu.mustDo(t, 400, actionReq("issue", `{"title":"t","small":300}`, nil))
		if msg := r.obj()["error"].(map[string]any)["message"].(string); r.errCode() != "invalid_action_input" ||
			!strings.Contains(msg, "input.small: expected integer, got 300, which is out of range") {
			t.Errorf("out of range: %s", r.raw)
		}
		for _, g := range goNames {
			if strings.Contains(string(r.raw), g) {
				t.Errorf("out of range: the answer holds %q: %s", g, r.raw)
			}
		}

		// Inputs that fit run; absent input is the zero value.
		for _, ok := range []struct{ action, input, want string }{
			{"issue", `{"title":"t","labels":["a"]}`, `{"title":"t","labels":["a"]}`},
			{"shout", `"hi"`, `"HI"`},
			{"batch", `[{"id":"1"}]`, `1`},
			{"batch", ``, `0`},
		} {
			r := bu.mustDo(t, 200, actionReq(ok.action, ok.input, nil))
			if got := strings.TrimSpace(string(r.raw)); got != ok.want {
				t.Errorf("%s(%s) = %s, want %s", ok.action, ok.input, got, ok.want)
			}
		}
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := bu.svc.Functions().Stop(sctx); err != nil { // the run entries are written
			t.Fatal(err)
		}
		// One entry per run: the out-of-range one and the four that fit;
		// none for the refused inputs.
		if n := countLogs() - logsBefore; n != 5 {
			t.Errorf("%d operations log entries, want 5 (one per run)", n)
		}
	})
}
