package ratelimit

import (
	"context"
	"time"
)

// Decision is the outcome of one request against a limit.
type Decision struct {
	Allowed bool
	// Remaining is how many more requests the window allows.
	Remaining int
	// RetryAfter is how long until the window resets, when not allowed.
	RetryAfter time.Duration
}

// Limiter decides whether a request of key may proceed. Implementations that
// share their counters (for example in Postgres) let several instances
// enforce one limit.
type Limiter interface {
	Allow(ctx context.Context, key string) (Decision, error)
}
