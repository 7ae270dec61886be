package oplog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"
)

// Writer appends entries, assigning their id and time.
type Writer struct {
	Store Store
	Now   func() time.Time
}

// NewID returns a new random entry id.
func NewID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Record appends e, setting e.ID (when empty), e.CreatedAt and a default
// Status of success. It returns the id.
func (w *Writer) Record(ctx context.Context, e *Entry) (string, error) {
	if e.ID == "" {
		e.ID = NewID()
	}
	if e.Status == "" {
		e.Status = StatusSuccess
	}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	e.CreatedAt = now().UTC().Truncate(time.Microsecond)
	if err := w.Store.AppendLog(ctx, e); err != nil {
		return "", err
	}
	return e.ID, nil
}

// List returns entries matching f, newest first.
func (w *Writer) List(ctx context.Context, f Filter) ([]*Entry, error) {
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	return w.Store.ListLogs(ctx, f)
}
