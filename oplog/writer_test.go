package oplog_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// listStore is a Store whose ListLogs and CountLogs are functions; it
// appends nothing.
type listStore struct {
	ListLogsFunc  func(f oplog.Filter) ([]*oplog.Entry, error)
	CountLogsFunc func(f oplog.CountFilter) ([]oplog.Count, error)
}

func (s listStore) CountLogs(_ context.Context, f oplog.CountFilter) ([]oplog.Count, error) {
	return s.CountLogsFunc(f)
}

func (s listStore) AppendLog(context.Context, *oplog.Entry) error    { return nil }
func (s listStore) AppendLogs(context.Context, []*oplog.Entry) error { return nil }
func (s listStore) ListLogs(_ context.Context, f oplog.Filter) ([]*oplog.Entry, error) {
	return s.ListLogsFunc(f)
}

// TestListPageAndGet: ListPage asks the Store for one entry more than the
// page and makes the next cursor of the page's last entry when it comes;
// it refuses, before reading, what no listing can match. Get looks the id
// up in the environment, and what it does not find is not_found.
func TestListPageAndGet(t *testing.T) {
	t.Parallel()
	var asked []oplog.Filter
	w := &oplog.Writer{Store: listStore{ListLogsFunc: func(f oplog.Filter) ([]*oplog.Entry, error) {
		asked = append(asked, f)
		out := []*oplog.Entry{}
		for i := range min(f.Limit, 3) {
			out = append(out, &oplog.Entry{ID: string(rune('c' - i)), CreatedAt: t0})
		}
		return out, nil
	}}}
	ctx := t.Context()
	page, err := w.ListPage(ctx, oplog.Filter{EnvironmentID: 7, Limit: 2})
	if err != nil || len(page.Entries) != 2 || page.Next == nil || page.Next.ID != "b" || !page.Next.CreatedAt.Equal(t0) {
		t.Fatalf("ListPage(limit 2) = %+v, %v", page, err)
	}
	if page, err = w.ListPage(ctx, oplog.Filter{EnvironmentID: 7, Limit: 3}); err != nil || len(page.Entries) != 3 || page.Next != nil {
		t.Fatalf("ListPage(limit 3) = %+v, %v", page, err)
	}
	if page, err = w.ListPage(ctx, oplog.Filter{EnvironmentID: 7}); err != nil || len(page.Entries) != 3 || page.Next != nil {
		t.Fatalf("ListPage(no limit) = %+v, %v", page, err)
	}
	if want := []int{3, 4, oplog.DefaultPageLimit + 1}; len(asked) != 3 || asked[0].Limit != want[0] || asked[1].Limit != want[1] ||
		asked[2].Limit != want[2] || asked[0].EnvironmentID != 7 {
		t.Errorf("the Store was asked %+v", asked)
	}

	asked = nil
	for name, f := range map[string]oplog.Filter{
		"limit above the maximum": {Limit: oplog.MaxPageLimit + 1},
		"negative limit":          {Limit: -1},
		"unknown status":          {Status: "failed"},
		"cursor without an id":    {After: &oplog.Cursor{CreatedAt: t0}},
		"cursor with a long id":   {After: &oplog.Cursor{CreatedAt: t0, ID: strings.Repeat("x", 256)}},
	} {
		if _, err := w.ListPage(ctx, f); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: ListPage = %v, want ErrInvalid", name, err)
		}
	}
	if len(asked) != 0 {
		t.Errorf("refused filters reached the Store: %+v", asked)
	}

	e, err := w.Get(ctx, 7, "c")
	if err != nil || e.ID != "c" || len(asked) != 1 || asked[0].EnvironmentID != 7 || asked[0].ID != "c" {
		t.Errorf("Get = %+v, %v; the Store was asked %+v", e, err, asked)
	}
	none := &oplog.Writer{Store: listStore{ListLogsFunc: func(oplog.Filter) ([]*oplog.Entry, error) { return nil, nil }}}
	for _, id := range []string{"c", "", strings.Repeat("x", 256), "a\x00b"} {
		_, err := none.Get(ctx, 7, id)
		var se *store.Error
		if !errors.Is(err, store.ErrNotFound) || !errors.As(err, &se) || se.Code != "not_found" {
			t.Errorf("Get(%q) = %v, want not_found", id, err)
		}
	}
}
