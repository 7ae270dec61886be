package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

// DefaultDeliveriesLimit is the number of deliveries ListDeliveries returns
// when the filter's Limit is 0.
const DefaultDeliveriesLimit = 100

func copyDelivery(d *webhooks.Delivery) *webhooks.Delivery {
	c := *d
	c.Body = slices.Clone(d.Body)
	if c.Body == nil {
		c.Body = []byte{}
	}
	c.DeliveredAt = copyTime(d.DeliveredAt)
	return &c
}

// CreateDeliveries stores the deliveries, all or none. An ID already stored,
// or given twice, is store.ErrConflict; a missing environment is
// store.ErrNotFound.
func (s *Store) CreateDeliveries(ctx context.Context, ds ...*webhooks.Delivery) error {
	for _, d := range ds {
		if err := checkText(d); err != nil {
			return err
		}
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	for _, d := range ds {
		if _, ok := s.d.envs[d.EnvironmentID]; !ok {
			return fmt.Errorf("environment %d: %w", d.EnvironmentID, store.ErrNotFound)
		}
	}
	ids := make(map[string]struct{}, len(ds))
	for _, d := range ds {
		_, stored := s.d.deliveries[d.ID]
		_, twice := ids[d.ID]
		if stored || twice {
			return fmt.Errorf("webhook delivery %q: %w", d.ID, store.ErrConflict)
		}
		ids[d.ID] = struct{}{}
	}
	for _, d := range ds {
		s.d.deliveries[d.ID] = copyDelivery(d)
	}
	return nil
}

// GetDelivery returns the delivery with the id, or store.ErrNotFound.
func (s *Store) GetDelivery(ctx context.Context, id string) (*webhooks.Delivery, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	d, ok := s.d.deliveries[id]
	if !ok {
		return nil, fmt.Errorf("webhook delivery %q: %w", id, store.ErrNotFound)
	}
	return copyDelivery(d), nil
}

// UpdateDelivery replaces Status, Attempts, LastStatusCode, LastError,
// UpdatedAt, DeliveredAt and NextAttemptAt of the delivery with d.ID, or
// returns store.ErrNotFound.
func (s *Store) UpdateDelivery(ctx context.Context, d *webhooks.Delivery) error {
	if err := checkText(d); err != nil {
		return err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	old, ok := s.d.deliveries[d.ID]
	if !ok {
		return fmt.Errorf("webhook delivery %q: %w", d.ID, store.ErrNotFound)
	}
	c := copyDelivery(old) // stored records are never mutated
	c.Status = d.Status
	c.Attempts = d.Attempts
	c.LastStatusCode = d.LastStatusCode
	c.LastError = d.LastError
	c.UpdatedAt = d.UpdatedAt
	c.DeliveredAt = copyTime(d.DeliveredAt)
	c.NextAttemptAt = d.NextAttemptAt
	s.d.deliveries[c.ID] = c
	return nil
}

// ClaimDeliveries claims up to limit pending deliveries due at now,
// earliest due first (then by ID), by moving their NextAttemptAt to until,
// counts the attempt it starts (Attempts+1), and returns them.
func (s *Store) ClaimDeliveries(ctx context.Context, now time.Time, limit int, until time.Time) ([]*webhooks.Delivery, error) {
	if limit <= 0 {
		return nil, nil
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var due []*webhooks.Delivery
	for _, d := range s.d.deliveries {
		if d.Status == webhooks.StatusPending && !d.NextAttemptAt.After(now) {
			due = append(due, d)
		}
	}
	slices.SortFunc(due, func(a, b *webhooks.Delivery) int {
		if c := a.NextAttemptAt.Compare(b.NextAttemptAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	due = due[:min(limit, len(due))]
	out := make([]*webhooks.Delivery, len(due))
	for i, d := range due {
		c := copyDelivery(d) // stored records are never mutated
		c.NextAttemptAt = until
		c.Attempts++
		s.d.deliveries[c.ID] = c
		out[i] = copyDelivery(c)
	}
	return out, nil
}

// RequeueDelivery makes a delivery that is not pending pending again and
// returns it as it was.
func (s *Store) RequeueDelivery(ctx context.Context, id string, at time.Time) (*webhooks.Delivery, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	old, ok := s.d.deliveries[id]
	if !ok {
		return nil, fmt.Errorf("webhook delivery %q: %w", id, store.ErrNotFound)
	}
	if old.Status == webhooks.StatusPending {
		return nil, fmt.Errorf("webhook delivery %q is pending: %w", id, store.ErrConflict)
	}
	c := copyDelivery(old)
	c.Status, c.Attempts, c.LastStatusCode, c.LastError, c.DeliveredAt = webhooks.StatusPending, 0, 0, "", nil
	c.UpdatedAt, c.NextAttemptAt = at, time.Time{}
	s.d.deliveries[id] = c
	return copyDelivery(old), nil
}

// ListDeliveries returns the deliveries matching f, newest first (by
// CreatedAt, then by ID, both descending), after f.After when set. An
// EnvironmentID of 0 matches every environment; a Limit of 0 means
// [DefaultDeliveriesLimit]. Text that Postgres cannot hold (a NUL byte,
// invalid UTF-8) is store.ErrInvalid, as with store/postgres.
func (s *Store) ListDeliveries(ctx context.Context, f webhooks.DeliveryFilter) ([]*webhooks.Delivery, error) {
	if err := checkText(f); err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var matched []*webhooks.Delivery
	for _, d := range s.d.deliveries {
		if !matches(d, f) || f.Status != "" && d.Status != f.Status {
			continue
		}
		if f.After != nil && newestFirst(d, f.After.CreatedAt, f.After.ID) <= 0 {
			continue
		}
		matched = append(matched, d)
	}
	slices.SortFunc(matched, func(a, b *webhooks.Delivery) int { return newestFirst(a, b.CreatedAt, b.ID) })
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultDeliveriesLimit
	}
	matched = matched[:min(limit, len(matched))]
	out := make([]*webhooks.Delivery, len(matched))
	for i, d := range matched {
		out[i] = copyDelivery(d)
		if f.OmitBody {
			out[i].Body = []byte{}
		}
	}
	return out, nil
}

// matches reports whether d matches the environment, type, integration and
// connection of f.
func matches(d *webhooks.Delivery, f webhooks.DeliveryFilter) bool {
	return (f.EnvironmentID == 0 || d.EnvironmentID == f.EnvironmentID) &&
		(f.Type == "" || d.Type == f.Type) &&
		(f.IntegrationKey == "" || d.IntegrationKey == f.IntegrationKey) &&
		(f.ConnectionID == "" || d.ConnectionID == f.ConnectionID)
}

// newestFirst compares d with the position (createdAt, id) in the
// newest-first order of deliveries: negative when d comes before it.
func newestFirst(d *webhooks.Delivery, createdAt time.Time, id string) int {
	if c := createdAt.Compare(d.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(id, d.ID)
}

// RequeueFailed makes up to limit failed deliveries matching f pending
// again, oldest first, and returns how many.
func (s *Store) RequeueFailed(ctx context.Context, f webhooks.DeliveryFilter, limit int, at time.Time) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	if err := checkText(f); err != nil {
		return 0, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	var failed []*webhooks.Delivery
	for _, d := range s.d.deliveries {
		if d.Status == webhooks.StatusFailed && matches(d, f) {
			failed = append(failed, d)
		}
	}
	// Oldest first: the reverse of the listing order.
	slices.SortFunc(failed, func(a, b *webhooks.Delivery) int { return newestFirst(b, a.CreatedAt, a.ID) })
	failed = failed[:min(limit, len(failed))]
	for _, d := range failed {
		c := copyDelivery(d)
		c.Status, c.Attempts, c.LastStatusCode, c.LastError, c.DeliveredAt = webhooks.StatusPending, 0, 0, "", nil
		c.UpdatedAt, c.NextAttemptAt = at, time.Time{}
		s.d.deliveries[c.ID] = c
	}
	return len(failed), nil
}

// DeleteDeliveriesBefore deletes up to limit delivered or failed
// deliveries whose UpdatedAt is before before, the oldest first, and
// returns how many.
func (s *Store) DeleteDeliveriesBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	old := oldestFirst(maps.Values(s.d.deliveries), limit, func(d *webhooks.Delivery) (time.Time, string, bool) {
		return d.UpdatedAt, d.ID, d.Status != webhooks.StatusPending && d.UpdatedAt.Before(before)
	})
	for _, d := range old {
		delete(s.d.deliveries, d.ID)
	}
	return len(old), nil
}

// TrimForwards deletes the oldest delivered or failed forward deliveries
// of the integration while its forward deliveries, each charged
// webhooks.ForwardCharge of its body and text, total more than max bytes,
// and returns the total left.
func (s *Store) TrimForwards(ctx context.Context, environmentID int64, integrationKey string, max int64) (int64, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	var total int64
	var finished []*webhooks.Delivery
	for _, d := range s.d.deliveries {
		if d.Type != webhooks.TypeForward || d.EnvironmentID != environmentID || d.IntegrationKey != integrationKey {
			continue
		}
		total += d.ForwardCharge()
		if d.Status != webhooks.StatusPending {
			finished = append(finished, d)
		}
	}
	// Oldest first: the reverse of the listing order.
	slices.SortFunc(finished, func(a, b *webhooks.Delivery) int { return newestFirst(b, a.CreatedAt, a.ID) })
	for _, d := range finished {
		if total <= max {
			break
		}
		delete(s.d.deliveries, d.ID)
		total -= d.ForwardCharge()
	}
	return total, nil
}
