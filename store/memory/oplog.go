package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// DefaultLogsLimit is the number of entries ListLogs returns when the
// filter's Limit is 0.
const DefaultLogsLimit = 100

// AppendLog stores e. An ID already stored is store.ErrConflict.
func (s *Store) AppendLog(ctx context.Context, e *oplog.Entry) error {
	meta, err := normalizeJSON("meta", e.Meta)
	if err != nil {
		return err
	}
	c := *e
	c.Meta = meta
	if err := checkText(&c); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, dup := s.d.logIDs[e.ID]; dup {
		return fmt.Errorf("log entry %q: %w", e.ID, store.ErrConflict)
	}
	s.d.logs = append(s.d.logs, &c)
	s.d.logIDs[c.ID] = struct{}{}
	return nil
}

// AppendLogs stores the entries, all or none. An ID already stored, or
// given twice, is store.ErrConflict.
func (s *Store) AppendLogs(ctx context.Context, es []*oplog.Entry) error {
	stored := make([]*oplog.Entry, len(es))
	for i, e := range es {
		meta, err := normalizeJSON("meta", e.Meta)
		if err != nil {
			return err
		}
		c := *e
		c.Meta = meta
		if err := checkText(&c); err != nil {
			return err
		}
		stored[i] = &c
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	ids := make(map[string]struct{}, len(es))
	for _, e := range stored {
		_, dup := s.d.logIDs[e.ID]
		if _, twice := ids[e.ID]; dup || twice {
			return fmt.Errorf("log entry %q: %w", e.ID, store.ErrConflict)
		}
		ids[e.ID] = struct{}{}
	}
	for _, e := range stored {
		s.d.logs = append(s.d.logs, e)
		s.d.logIDs[e.ID] = struct{}{}
	}
	return nil
}

// ListLogs returns the entries matching f, newest first (by CreatedAt, then
// by ID, both descending). An EnvironmentID of 0 matches every environment;
// a Limit of 0 means [DefaultLogsLimit].
func (s *Store) ListLogs(ctx context.Context, f oplog.Filter) ([]*oplog.Entry, error) {
	if err := checkText(f); err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var matched []*oplog.Entry
	for _, e := range s.d.logs {
		switch {
		case f.EnvironmentID != 0 && e.EnvironmentID != f.EnvironmentID,
			f.Type != "" && e.Type != f.Type,
			f.IntegrationKey != "" && e.IntegrationKey != f.IntegrationKey,
			f.ConnectionID != "" && e.ConnectionID != f.ConnectionID,
			!f.Since.IsZero() && e.CreatedAt.Before(f.Since),
			!f.Until.IsZero() && !e.CreatedAt.Before(f.Until):
			continue
		}
		matched = append(matched, e)
	}
	slices.SortFunc(matched, func(a, b *oplog.Entry) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultLogsLimit
	}
	matched = matched[:min(limit, len(matched))]
	out := make([]*oplog.Entry, len(matched))
	for i, e := range matched {
		out[i] = copyEntry(e)
	}
	return out, nil
}

// DeleteLogsBefore deletes up to limit entries whose CreatedAt is before
// before, the oldest first, and returns how many.
func (s *Store) DeleteLogsBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	old := oldestFirst(slices.Values(s.d.logs), limit, func(e *oplog.Entry) (time.Time, string, bool) {
		return e.CreatedAt, e.ID, e.CreatedAt.Before(before)
	})
	if len(old) == 0 {
		return 0, nil
	}
	gone := make(map[string]struct{}, len(old))
	for _, e := range old {
		gone[e.ID] = struct{}{}
		delete(s.d.logIDs, e.ID)
	}
	// A new slice: a snapshot (WithTx) shares the old one's array.
	kept := make([]*oplog.Entry, 0, len(s.d.logs)-len(old))
	for _, e := range s.d.logs {
		if _, ok := gone[e.ID]; !ok {
			kept = append(kept, e)
		}
	}
	s.d.logs = kept
	return len(old), nil
}
