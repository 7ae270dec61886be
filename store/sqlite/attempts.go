package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/embedauth/connect/store"
	"github.com/embedauth/connect/webhooks"
)

var _ webhooks.AttemptRecorder = (*Store)(nil)

// RecordAttempts stores the outcomes of delivery attempts, each with its
// log entry, in one transaction that may be acknowledged before it is on
// disk (store.WithRelaxedDurability: losing it in a crash of the machine
// only means the webhooks are delivered again). Each attempt is atomic on
// its own, under a savepoint: one that fails (its error is returned, joined
// with the others') leaves the rest stored. An attempt whose delivery no
// longer exists is skipped, with its log entry.
func (s *Store) RecordAttempts(ctx context.Context, as []webhooks.Attempt) error {
	var errs []error
	err := s.WithTx(store.WithRelaxedDurability(ctx), func(ctx context.Context) error {
		q := s.writer(ctx)
		for i, a := range as {
			if _, err := q.ExecContext(ctx, `SAVEPOINT attempt`); err != nil {
				return dbErr(ctx, "record attempts", err)
			}
			err := s.recordAttempt(ctx, a)
			if err != nil {
				if _, rerr := q.ExecContext(ctx, `ROLLBACK TO attempt`); rerr != nil {
					return dbErr(ctx, "record attempts", rerr)
				}
				errs = append(errs, fmt.Errorf("sqlite: attempt %d of the batch: %w", i, err))
			}
			if _, err := q.ExecContext(ctx, `RELEASE attempt`); err != nil {
				return dbErr(ctx, "record attempts", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return errors.Join(errs...)
}

func (s *Store) recordAttempt(ctx context.Context, a webhooks.Attempt) error {
	if a.Delivery == nil {
		return fmt.Errorf("sqlite: an attempt without its delivery: %w", store.ErrInvalid)
	}
	err := s.UpdateDelivery(ctx, a.Delivery)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil || a.Entry == nil {
		return err
	}
	return s.AppendLog(ctx, a.Entry)
}
