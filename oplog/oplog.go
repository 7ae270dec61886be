package oplog

import (
	"context"
	"time"
)

// Entry is one record of the operations log: a mutating API operation, an
// auth event or a webhook delivery attempt. It never holds a secret.
type Entry struct {
	// ID is a random identifier, the log_id that connection errors point at.
	ID            string
	EnvironmentID int64
	// Type is the area: "integration", "connection", "auth", "webhook",
	// "environment", "proxy".
	Type string
	// Operation is what happened, such as "create", "update", "delete",
	// "import", "refresh" or "delivery".
	Operation string
	// Status is "success" or "failure".
	Status         string
	IntegrationKey string
	ConnectionID   string
	// Message is a short human-readable summary.
	Message string
	// Meta holds structured details; never secrets.
	Meta      map[string]any
	CreatedAt time.Time
}

// Statuses of an Entry.
const (
	StatusSuccess = "success"
	StatusFailure = "failure"
)

// Filter selects entries of one environment. Zero fields match anything.
type Filter struct {
	EnvironmentID int64
	// ID selects the entry with this id.
	ID   string
	Type string
	// Operation is what happened, such as "create" or "refresh".
	Operation string
	// Status is StatusSuccess or StatusFailure.
	Status         string
	IntegrationKey string
	ConnectionID   string
	// DeliveryID selects the attempts of one webhook delivery: the
	// entries whose Meta["delivery_id"] is it.
	DeliveryID string
	// Since and Until bound CreatedAt: Since <= CreatedAt < Until.
	Since time.Time
	Until time.Time
	// After continues a listing: only the entries that come after this
	// position in the newest-first order (created before it, or at the
	// same time with a smaller ID). Entries written meanwhile are newer
	// than any position, so that paging with the last entry of each page
	// neither repeats nor skips one.
	After *Cursor
	// Limit caps the number of entries; 0 means 100.
	Limit int
}

// Cursor is a position in the newest-first order of entries: that of the
// entry with this CreatedAt (stored at microsecond precision) and ID. Its String form is the opaque
// next_cursor of the log API; ParseCursor reads it.
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// Store is what the operations log needs from storage.
type Store interface {
	// AppendLog stores e. e.ID must be set; a duplicate is ErrConflict.
	AppendLog(ctx context.Context, e *Entry) error
	// AppendLogs stores the entries, all or none, as one write: an ID
	// already stored or given twice is ErrConflict, and then none is
	// stored (an enclosing transaction stays usable).
	AppendLogs(ctx context.Context, es []*Entry) error
	// ListLogs returns matching entries, newest first.
	ListLogs(ctx context.Context, f Filter) ([]*Entry, error)
}

// Counter is the part of a Store that counts entries over time
// (Writer.Stats, GET /logs/stats). store/sqlite and store/postgres
// implement it.
type Counter interface {
	// CountLogs counts the entries of f.EnvironmentID (every environment
	// for 0) with f.Since <= CreatedAt < f.Until, grouped by the bucket
	// that holds their CreatedAt (f.Bucket.Start), Type, Operation and
	// Status, in one read: one Count per group that has entries, in any
	// order. A Bucket other than BucketHour and BucketDay is
	// store.ErrInvalid.
	CountLogs(ctx context.Context, f CountFilter) ([]Count, error)
}

// Pruner is the part of a Store that applies the retention of the log
// (connect.Service.Retain).
type Pruner interface {
	// DeleteLogsBefore deletes up to limit entries whose CreatedAt is
	// before before, the oldest first, and returns how many it deleted. A
	// limit of 0 or less deletes none.
	DeleteLogsBefore(ctx context.Context, before time.Time, limit int) (int, error)
}
