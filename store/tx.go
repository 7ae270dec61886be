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

type relaxedKey struct{}

// WithRelaxedDurability marks ctx so that a transaction that WithTx starts
// with it may be acknowledged before it is durable on disk (in Postgres:
// synchronous_commit off for that transaction; a Store without such a knob
// ignores the mark). A database crash can then lose the transaction, never
// corrupt anything. Use it only for records whose loss the caller
// tolerates, such as the outcome of a webhook attempt: if it is lost, the
// job runs again and the webhook is delivered again under the same
// delivery id.
func WithRelaxedDurability(ctx context.Context) context.Context {
	return context.WithValue(ctx, relaxedKey{}, true)
}

// RelaxedDurability reports whether ctx was marked by WithRelaxedDurability.
func RelaxedDurability(ctx context.Context) bool {
	v, _ := ctx.Value(relaxedKey{}).(bool)
	return v
}
