package webhooks

import (
	"context"
	"time"

	"github.com/embedauth/connect/oplog"
)

// Delivery statuses.
const (
	StatusPending   = "pending"
	StatusDelivered = "delivered"
	StatusFailed    = "failed"
)

// Delivery is one webhook to one destination URL: the outbox record. Its ID
// is sent as the delivery id header and stays the same across attempts.
type Delivery struct {
	ID            string
	EnvironmentID int64
	// EventID groups the deliveries of one event (one per destination).
	EventID string
	// Type is the webhook type: auth, sync, async_action or forward.
	Type           string
	IntegrationKey string
	ConnectionID   string
	URL            string
	// Body is the exact JSON that is signed and sent.
	Body []byte
	// Status is pending, delivered or failed.
	Status string
	// Attempts counts the attempts (POSTs) started so far. A claim counts
	// the attempt it starts (Store.ClaimDeliveries), so an attempt whose
	// process died before its outcome was recorded is counted too; a
	// claimed delivery that was not attempted after all (the process
	// stopped first) is released with the count taken back. A crash may
	// thus count an attempt whose POST never left, never miss one that
	// did.
	Attempts int
	// LastStatusCode is the HTTP status of the last attempt (0 for a
	// network error).
	LastStatusCode int
	// LastError describes the last failure; never a secret.
	LastError   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	DeliveredAt *time.Time
	// NextAttemptAt is when a pending delivery is due: the time of its
	// next attempt, on the real clock. Claiming it (Store.ClaimDeliveries)
	// moves it to the end of the claim's lease, so that no other process
	// takes it meanwhile. The zero time is due at once, before the others.
	NextAttemptAt time.Time
	// Unverified marks the forward of a provider webhook that no
	// signature verified (Event.Unverified): anyone may have caused it, so
	// the Deliverer logs its attempts sampled (DelivererConfig.Sampler).
	// Its own status, last error and attempt count are kept as for any
	// delivery. Set when it is created; never changed.
	Unverified bool
}

// DeliveryFilter selects deliveries of one environment. Zero fields match
// anything.
type DeliveryFilter struct {
	EnvironmentID int64
	// Status is pending, delivered or failed.
	Status string
	// Type is the webhook type (TypeAuth, TypeSync, ...).
	Type string
	// IntegrationKey is the integration's unique key (provider config
	// key).
	IntegrationKey string
	ConnectionID   string
	// After continues a listing: only the deliveries that come after this
	// position in the newest-first order (created before it, or at the
	// same time with a smaller ID). Deliveries created meanwhile are newer
	// than any position, so that paging with the last delivery of each
	// page neither repeats nor skips one.
	After *DeliveryCursor
	// Limit caps the result; 0 means 100. Newest first.
	Limit int
	// OmitBody leaves the Body of the deliveries listed empty, which
	// spares reading bodies (which may be large) that the caller does not
	// need.
	OmitBody bool
}

// DeliveryCursor is a position in the newest-first order of deliveries:
// that of the delivery with this CreatedAt and ID. Its String form is the
// opaque next_cursor of the deliveries API; ParseDeliveryCursor reads it.
type DeliveryCursor struct {
	CreatedAt time.Time
	ID        string
}

// Store is what the webhooks package needs from storage.
type Store interface {
	// CreateDeliveries stores the deliveries. IDs are set by the caller
	// and unique (a duplicate is ErrConflict).
	CreateDeliveries(ctx context.Context, ds ...*Delivery) error
	// GetDelivery returns a delivery by id, or ErrNotFound.
	GetDelivery(ctx context.Context, id string) (*Delivery, error)
	// UpdateDelivery replaces the mutable fields (Status, Attempts,
	// LastStatusCode, LastError, UpdatedAt, DeliveredAt, NextAttemptAt) of
	// the delivery with d.ID, or returns ErrNotFound.
	UpdateDelivery(ctx context.Context, d *Delivery) error
	// ListDeliveries returns matching deliveries, newest first (by
	// CreatedAt, then by ID, both descending), after f.After when set.
	ListDeliveries(ctx context.Context, f DeliveryFilter) ([]*Delivery, error)
	// ClaimDeliveries claims up to limit pending deliveries that are due
	// at now (NextAttemptAt not after now), earliest due first, by setting
	// their NextAttemptAt to until and adding one to their Attempts (the
	// attempt the claim starts), and returns them as updated. Claims
	// are atomic: of concurrent callers, in this process or another on the
	// same database, each delivery goes to one, and none waits for
	// another's claim (Postgres: FOR UPDATE SKIP LOCKED).
	ClaimDeliveries(ctx context.Context, now time.Time, limit int, until time.Time) ([]*Delivery, error)
}

// Requeuer is the part of a Store that resends deliveries
// (connect.Service.ResendWebhook).
type Requeuer interface {
	// RequeueDelivery makes a delivery that is not pending pending again,
	// atomically (of concurrent calls, one wins): Status pending, Attempts
	// 0, no LastStatusCode, LastError or DeliveredAt, UpdatedAt at, and
	// NextAttemptAt zero (due at once, ahead of the others). It
	// returns the delivery as it was before. A pending delivery is
	// ErrConflict; a missing one ErrNotFound.
	RequeueDelivery(ctx context.Context, id string, at time.Time) (*Delivery, error)
	// RequeueFailed makes up to limit failed deliveries that match f
	// (its EnvironmentID, Type, IntegrationKey and ConnectionID; Status,
	// After and Limit are ignored) pending again, oldest first, as
	// RequeueDelivery does each, and returns how many it requeued. Of
	// concurrent calls, each requeues other deliveries (Postgres: FOR
	// UPDATE SKIP LOCKED). A limit of 0 or less requeues none.
	RequeueFailed(ctx context.Context, f DeliveryFilter, limit int, at time.Time) (int, error)
}

// Attempt is the outcome of one delivery attempt: the delivery with its
// updated fields (those UpdateDelivery replaces) and the attempt's
// operations log entry, nil when the attempt is not logged (an attempt of
// an Unverified delivery that the Sampler left out).
type Attempt struct {
	Delivery *Delivery
	Entry    *oplog.Entry
}

// AttemptRecorder is an optional interface of a Store: it records the
// outcomes of delivery attempts with their log entries, each atomically, in
// one round trip. The Deliverer coalesces the outcomes of concurrent
// attempts into one call. A Store may acknowledge it before it is
// durable (see store.WithRelaxedDurability): losing it in a database crash
// only means the webhook is delivered again. Without it, the Deliverer uses
// UpdateDelivery and AppendLog in one transaction per attempt.
type AttemptRecorder interface {
	// RecordAttempts stores each attempt, and its log entry when it has
	// one. An attempt whose delivery no longer exists is skipped, with its
	// log entry. An attempt the Store cannot hold (text it cannot store)
	// is refused alone, with store.ErrInvalid: the others are stored.
	RecordAttempts(ctx context.Context, as []Attempt) error
}

// Pruner is the part of a Store that bounds what the outbox keeps: the
// retention of finished deliveries (connect.Service.Retain) and the storage
// quota of forwarded provider webhooks (IncomingConfig.Forwards).
type Pruner interface {
	// DeleteDeliveriesBefore deletes up to limit deliveries that are
	// delivered or failed and whose UpdatedAt (the time of their final
	// state) is before before, the oldest first, and returns how many it
	// deleted. A pending delivery is never deleted. Of concurrent calls,
	// each deletes other deliveries. A limit of 0 or less deletes none.
	DeleteDeliveriesBefore(ctx context.Context, before time.Time, limit int) (int, error)
	// TrimForwards bounds the forward deliveries (Type TypeForward) of
	// one integration: while the charges (Delivery.ForwardCharge: the
	// body and what its row costs beyond it) of all of them
	// (pending, delivered and failed) total more than max bytes, it
	// deletes the delivered and failed ones, the oldest (by CreatedAt,
	// then ID) first. It returns the total left, which stays above max
	// when the pending ones alone exceed it. Concurrent calls for the same
	// integration take turns; in a transaction (Store.WithTx), the total
	// and the deletions are those of that transaction.
	TrimForwards(ctx context.Context, environmentID int64, integrationKey string, max int64) (int64, error)
}
