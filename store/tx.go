package store

import "context"

// Transactor runs a function atomically. Every Store implements it.
//
// Store methods called with the context passed to fn take part in the
// transaction; when fn returns an error, none of their writes remain. Nested
// calls join the outer transaction. Implementations must not hold a
// transaction open across anything but fn.
//
// Inside fn, use fn's context for every Store call and do not share it
// between goroutines. A Store method that reports ErrNotFound or
// ErrConflict inside fn leaves the transaction usable.
type Transactor interface {
	WithTx(ctx context.Context, fn func(ctx context.Context) error) error
}

// Page selects a slice of an ordered list.
type Page struct {
	// Limit is the maximum number of items; 0 means the implementation's
	// default.
	Limit int
	// Offset is the number of items skipped.
	Offset int
}
