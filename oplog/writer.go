package oplog

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync/atomic"
	"time"
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
