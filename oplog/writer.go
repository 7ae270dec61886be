package oplog

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/embedauth/connect/store"
)

// Writer appends entries, assigning their id and time.
type Writer struct {
	Store Store
	Now   func() time.Time

	lastID atomic.Int64
}

// NewID returns a new entry id: 16 hex digits of a strictly increasing
// wall-clock nanosecond count followed by 12 random hex digits, so that ids
// sort in creation order within a process and are unique across processes.
func (w *Writer) NewID() string {
	now := time.Now().UnixNano()
	for {
		last := w.lastID.Load()
		if now <= last {
			now = last + 1
		}
		if w.lastID.CompareAndSwap(last, now) {
			break
		}
	}
	b := make([]byte, 14)
	binary.BigEndian.PutUint64(b, uint64(now))
	rand.Read(b[8:])
	return hex.EncodeToString(b)
}

// Record appends e, setting e.ID (when empty), e.CreatedAt and a default
// Status of success. It returns the id.
func (w *Writer) Record(ctx context.Context, e *Entry) (string, error) {
	w.Stamp(e)
	if err := w.Store.AppendLog(ctx, e); err != nil {
		return "", err
	}
	return e.ID, nil
}

// RecordAll appends the entries in one write (Store.AppendLogs), all or
// none, stamping each as Record does.
func (w *Writer) RecordAll(ctx context.Context, es []*Entry) error {
	if len(es) == 0 {
		return nil
	}
	for _, e := range es {
		w.Stamp(e)
	}
	return w.Store.AppendLogs(ctx, es)
}

// Stamp sets e.ID (when empty), e.CreatedAt and a default Status of
// success, as Record does, for callers that store the entry themselves.
func (w *Writer) Stamp(e *Entry) {
	if e.ID == "" {
		e.ID = w.NewID()
	}
	if e.Status == "" {
		e.Status = StatusSuccess
	}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	e.CreatedAt = now().UTC().Truncate(time.Microsecond)
}

// List returns entries matching f, newest first.
func (w *Writer) List(ctx context.Context, f Filter) ([]*Entry, error) {
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	return w.Store.ListLogs(ctx, f)
}

// The bounds of a page of ListPage (and of GET /logs/operations).
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 100
)

// Page is one page of a listing of entries.
type Page struct {
	// Entries are newest first.
	Entries []*Entry
	// Next is the position of the last entry when more entries match
	// (the Filter.After of the next page); nil on the last page.
	Next *Cursor
}

// ListPage returns one page of the entries that match f, newest first: up
// to f.Limit (0 means DefaultPageLimit, at most MaxPageLimit), after
// f.After. An EnvironmentID of 0 lists every environment. A Limit out of
// range, a Status other than success or failure, or an After whose ID is
// not 1 to 255 characters without control characters is store.ErrInvalid.
func (w *Writer) ListPage(ctx context.Context, f Filter) (*Page, error) {
	if f.Limit < 0 || f.Limit > MaxPageLimit {
		return nil, invalidFilter("limit", fmt.Sprintf("must be from 1 to %d", MaxPageLimit))
	}
	switch f.Status {
	case "", StatusSuccess, StatusFailure:
	default:
		return nil, invalidFilter("status", "must be success or failure")
	}
	if f.After != nil && !validText(f.After.ID) {
		return nil, invalidFilter("cursor", "not a position of the listing")
	}
	limit := f.Limit
	if limit == 0 {
		limit = DefaultPageLimit
	}
	// One more than the page tells whether another page follows.
	f.Limit = limit + 1
	es, err := w.Store.ListLogs(ctx, f)
	if err != nil {
		return nil, err
	}
	page := &Page{Entries: es}
	if len(es) > limit {
		page.Entries = es[:limit]
		last := es[limit-1]
		page.Next = &Cursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	return page, nil
}

// Get returns the entry with the id in the environment (any environment
// when environmentID is 0), or a not-found error (code not_found) when
// there is none.
func (w *Writer) Get(ctx context.Context, environmentID int64, id string) (*Entry, error) {
	if !validText(id) {
		return nil, errEntryNotFound(id)
	}
	es, err := w.Store.ListLogs(ctx, Filter{EnvironmentID: environmentID, ID: id, Limit: 1})
	if err != nil {
		return nil, err
	}
	if len(es) == 0 {
		return nil, errEntryNotFound(id)
	}
	return es[0], nil
}

// errEntryNotFound is the answer for an entry that does not exist or
// belongs to another environment: the two are not told apart. An id that
// no entry can have is not repeated.
func errEntryNotFound(id string) error {
	if !validText(id) {
		return store.NotFound("not_found", "No operations log entry has this id.")
	}
	return store.NotFound("not_found", "No operations log entry has the id %q.", id)
}

func invalidFilter(field, message string) error {
	return store.Invalid("invalid_filter", "The filter is invalid.", store.FieldError{Code: "invalid_value",
		Message: message, Path: []string{field}})
}
