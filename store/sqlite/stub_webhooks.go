package sqlite

// Placeholders of the methods not written yet; each group deletes its file.

import (
	"context"
	"time"

	"github.com/embedauth/connect/webhooks"
)

// webhooks.Store
func (s *Store) ClaimDeliveries(ctx context.Context, now time.Time, limit int, until time.Time) ([]*webhooks.Delivery, error) {
	panic("sqlite: ClaimDeliveries is not implemented yet")
}
func (s *Store) CreateDeliveries(ctx context.Context, ds ...*webhooks.Delivery) error {
	panic("sqlite: CreateDeliveries is not implemented yet")
}
func (s *Store) GetDelivery(ctx context.Context, id string) (*webhooks.Delivery, error) {
	panic("sqlite: GetDelivery is not implemented yet")
}
func (s *Store) ListDeliveries(ctx context.Context, f webhooks.DeliveryFilter) ([]*webhooks.Delivery, error) {
	panic("sqlite: ListDeliveries is not implemented yet")
}
func (s *Store) UpdateDelivery(ctx context.Context, d *webhooks.Delivery) error {
	panic("sqlite: UpdateDelivery is not implemented yet")
}

// webhooks.Requeuer
func (s *Store) RequeueDelivery(ctx context.Context, id string, at time.Time) (*webhooks.Delivery, error) {
	panic("sqlite: RequeueDelivery is not implemented yet")
}
func (s *Store) RequeueFailed(ctx context.Context, f webhooks.DeliveryFilter, limit int, at time.Time) (int, error) {
	panic("sqlite: RequeueFailed is not implemented yet")
}

// webhooks.Pruner
func (s *Store) DeleteDeliveriesBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	panic("sqlite: DeleteDeliveriesBefore is not implemented yet")
}
func (s *Store) TrimForwards(ctx context.Context, environmentID int64, integrationKey string, max int64) (int64, error) {
	panic("sqlite: TrimForwards is not implemented yet")
}
