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
	EnvironmentID  int64
	Type           string
	IntegrationKey string
	ConnectionID   string
	// Since and Until bound CreatedAt: Since <= CreatedAt < Until.
	Since time.Time
	Until time.Time
	// Limit caps the number of entries; 0 means 100.
	Limit int
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

// Pruner is the part of a Store that applies the retention of the log
// (connect.Service.Retain).
type Pruner interface {
	// DeleteLogsBefore deletes up to limit entries whose CreatedAt is
	// before before, the oldest first, and returns how many it deleted. A
	// limit of 0 or less deletes none.
	DeleteLogsBefore(ctx context.Context, before time.Time, limit int) (int, error)
}
