package webhooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// Limits of the Outbox.
const (
	// DefaultListLimit is the page size of List when the filter's Limit is
	// 0; MaxListLimit is the largest.
	DefaultListLimit = 100
	MaxListLimit     = 1000
	// MaxResendBatch is the most failed deliveries one ResendFailed call
	// requeues, and its default: the work of one call (one statement) stays
	// bounded whatever the backlog; a caller with more calls again.
	MaxResendBatch = 1000
)

// OutboxStore is the Store of an Outbox.
type OutboxStore interface {
	Store
	Requeuer
}

// OutboxConfig gives an Outbox its parts. connect.New builds one from the
// Service's.
type OutboxConfig struct {
	// Store holds the deliveries. Required.
	Store OutboxStore
	// Scheduler runs the delivery job (JobKind) that a resend enqueues, so
	// that the Deliverers look at once. Required.
	Scheduler jobs.Scheduler
	// Transactor makes a resend, its job and its log entry atomic.
	// Optional.
	Transactor store.Transactor
	// Log records each resend. Optional.
	Log *oplog.Writer
	// Now stamps the requeued deliveries' UpdatedAt. Defaults to time.Now.
	Now func() time.Time
}

// Outbox lists an environment's webhook deliveries and sends failed (or
// delivered) ones again, from Go or through its HTTP routes (Routes).
type Outbox struct {
	cfg OutboxConfig
}

// NewOutbox returns an Outbox.
func NewOutbox(cfg OutboxConfig) *Outbox {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Outbox{cfg: cfg}
}

// DeliveryPage is one page of deliveries, newest first.
type DeliveryPage struct {
	Deliveries []*Delivery
	// Next is the position after the last delivery of the page, to pass
	// as DeliveryFilter.After for the next page; nil when there is none.
	Next *DeliveryCursor
}

// ResendResult is what ResendFailed did.
type ResendResult struct {
	// Resent is the number of failed deliveries made pending again.
	Resent int
	// More reports whether failed deliveries that match the filter are
	// left (the call's limit was reached): call again to resend them.
	More bool
}

// errDeliveryNotFound is the answer for a delivery that does not exist or
// belongs to another environment: the two are not told apart.
func errDeliveryNotFound(id string) error {
	return store.NotFound("webhook_delivery_not_found", "No webhook delivery %q.", id)
}

// checkFilter refuses a filter that no delivery can match because it is
// malformed: an unknown status, text a store cannot hold, a limit out of
// range.
func checkFilter(f DeliveryFilter, maxLimit int) error {
	switch f.Status {
	case "", StatusPending, StatusDelivered, StatusFailed:
	default:
		return store.Invalid("invalid_filter", fmt.Sprintf("Unknown delivery status %q: pending, delivered or failed.", f.Status),
			store.FieldError{Code: "invalid_value", Message: "must be pending, delivered or failed", Path: []string{"status"}})
	}
	for _, c := range []struct{ name, v string }{{"type", f.Type}, {"integration_id", f.IntegrationKey}, {"connection_id", f.ConnectionID}} {
		if c.v != "" && !validText(c.v) {
			return store.Invalid("invalid_filter", "The filter is invalid.", store.FieldError{Code: "invalid_value",
				Message: fmt.Sprintf("must be 1 to %d characters without control characters", maxTextLen), Path: []string{c.name}})
		}
	}
	if f.After != nil && !validText(f.After.ID) {
		return store.Invalid("invalid_filter", "The filter is invalid.", store.FieldError{Code: "invalid_value",
			Message: "not a position of the listing", Path: []string{"cursor"}})
	}
	if f.Limit < 0 || f.Limit > maxLimit {
		return store.Invalid("invalid_filter", "The filter is invalid.", store.FieldError{Code: "invalid_value",
			Message: fmt.Sprintf("must be from 1 to %d", maxLimit), Path: []string{"limit"}})
	}
	return nil
}

// List returns one page of the deliveries that match f, newest first: up
// to f.Limit (0 means DefaultListLimit, at most MaxListLimit), after
// f.After. An EnvironmentID of 0 lists every environment. A malformed
// filter is store.ErrInvalid.
func (o *Outbox) List(ctx context.Context, f DeliveryFilter) (*DeliveryPage, error) {
	if err := checkFilter(f, MaxListLimit); err != nil {
		return nil, err
	}
	limit := f.Limit
	if limit == 0 {
		limit = DefaultListLimit
	}
	// One more than the page tells whether another page follows.
	f.Limit = limit + 1
	ds, err := o.cfg.Store.ListDeliveries(ctx, f)
	if err != nil {
		return nil, err
	}
	page := &DeliveryPage{Deliveries: ds}
	if len(ds) > limit {
		page.Deliveries = ds[:limit]
		last := ds[limit-1]
		page.Next = &DeliveryCursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	return page, nil
}

// Get returns the delivery with the id in the environment (any environment
// when environmentID is 0), or a not-found error (code
// webhook_delivery_not_found) when there is none.
func (o *Outbox) Get(ctx context.Context, environmentID int64, id string) (*Delivery, error) {
	if !validText(id) {
		return nil, errDeliveryNotFound(id)
	}
	d, err := o.cfg.Store.GetDelivery(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && environmentID != 0 && d.EnvironmentID != environmentID {
		return nil, errDeliveryNotFound(id)
	}
	return d, err
}

// Resend sends a failed (or delivered) delivery of the environment (any
// when environmentID is 0) again, to the same URL with the same body and
// delivery id: it makes it pending with a fresh set of attempts, due at
// once, enqueues the delivery job and logs the resend, in one transaction,
// and returns the delivery as it now is. A pending delivery is a conflict
// (code webhook_delivery_pending): it is being delivered. Of concurrent
// resends of one delivery, one wins.
func (o *Outbox) Resend(ctx context.Context, environmentID int64, id string) (*Delivery, error) {
	var out *Delivery
	err := o.inTx(ctx, func(ctx context.Context) error {
		if _, err := o.Get(ctx, environmentID, id); err != nil {
			return err
		}
		was, err := o.cfg.Store.RequeueDelivery(ctx, id, o.stamp())
		switch {
		case errors.Is(err, store.ErrNotFound):
			return errDeliveryNotFound(id)
		case errors.Is(err, store.ErrConflict):
			return store.Conflict("webhook_delivery_pending", "Webhook delivery %q is still pending.", id)
		case err != nil:
			return err
		}
		if err := o.cfg.Scheduler.Enqueue(ctx, NewJob()); err != nil {
			return fmt.Errorf("webhooks: enqueue delivery: %w", err)
		}
		if err := o.log(ctx, &oplog.Entry{
			EnvironmentID:  was.EnvironmentID,
			Type:           "webhook",
			Operation:      "resend",
			IntegrationKey: was.IntegrationKey,
			ConnectionID:   was.ConnectionID,
			Message:        fmt.Sprintf("%s webhook queued again (was %s)", was.Type, was.Status),
			Meta:           map[string]any{"delivery_id": was.ID, "event_id": was.EventID, "previous_status": was.Status},
		}); err != nil {
			return err
		}
		out, err = o.cfg.Store.GetDelivery(ctx, id)
		return err
	})
	return out, err
}

// ResendFailed sends failed deliveries that match f (its EnvironmentID,
// Type, IntegrationKey and ConnectionID; 0 or empty match any) again, as
// Resend does each: up to limit of them (0 means MaxResendBatch, at most
// MaxResendBatch), oldest first, with one delivery job and one log entry.
// When the result says More, call again for the next ones. f.Status may
// only be empty or failed; f.After and f.Limit must be unset.
func (o *Outbox) ResendFailed(ctx context.Context, f DeliveryFilter, limit int) (ResendResult, error) {
	if f.Status != "" && f.Status != StatusFailed {
		return ResendResult{}, store.Invalid("invalid_filter", "Only failed deliveries are resent in bulk.",
			store.FieldError{Code: "invalid_value", Message: "must be failed", Path: []string{"status"}})
	}
	if f.After != nil || f.Limit != 0 {
		return ResendResult{}, store.Invalid("invalid_filter", "ResendFailed takes no position and its limit as an argument.")
	}
	if err := checkFilter(f, 0); err != nil {
		return ResendResult{}, err
	}
	if limit < 0 || limit > MaxResendBatch {
		return ResendResult{}, store.Invalid("invalid_filter", "The limit is invalid.", store.FieldError{Code: "invalid_value",
			Message: fmt.Sprintf("must be from 1 to %d", MaxResendBatch), Path: []string{"limit"}})
	}
	if limit == 0 {
		limit = MaxResendBatch
	}
	var res ResendResult
	err := o.inTx(ctx, func(ctx context.Context) error {
		n, err := o.cfg.Store.RequeueFailed(ctx, f, limit, o.stamp())
		if err != nil || n == 0 {
			return err
		}
		res.Resent = n
		if err := o.cfg.Scheduler.Enqueue(ctx, NewJob()); err != nil {
			return fmt.Errorf("webhooks: enqueue delivery: %w", err)
		}
		if f.EnvironmentID == 0 {
			return nil // the log is per environment
		}
		meta := map[string]any{"count": n}
		for k, v := range map[string]string{"type": f.Type, "integration_id": f.IntegrationKey, "connection_id": f.ConnectionID} {
			if v != "" {
				meta[k] = v
			}
		}
		return o.log(ctx, &oplog.Entry{
			EnvironmentID:  f.EnvironmentID,
			Type:           "webhook",
			Operation:      "resend",
			IntegrationKey: f.IntegrationKey,
			ConnectionID:   f.ConnectionID,
			Message:        fmt.Sprintf("%d failed webhook deliveries queued again", n),
			Meta:           meta,
		})
	})
	if err != nil {
		return ResendResult{}, err
	}
	if res.Resent == limit {
		f.Status, f.Limit = StatusFailed, 1
		left, err := o.cfg.Store.ListDeliveries(ctx, f)
		if err != nil {
			return res, err
		}
		res.More = len(left) > 0
	}
	return res, nil
}

func (o *Outbox) inTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if o.cfg.Transactor != nil {
		return o.cfg.Transactor.WithTx(ctx, fn)
	}
	return fn(ctx)
}

func (o *Outbox) log(ctx context.Context, e *oplog.Entry) error {
	if o.cfg.Log == nil {
		return nil
	}
	if _, err := o.cfg.Log.Record(ctx, e); err != nil {
		return fmt.Errorf("webhooks: log: %w", err)
	}
	return nil
}

func (o *Outbox) stamp() time.Time { return o.cfg.Now().UTC().Truncate(time.Microsecond) }
