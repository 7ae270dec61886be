package webhooks

import "context"

// Webhook types, the value of the body's "type".
const (
	TypeAuth        = "auth"
	TypeSync        = "sync"
	TypeAsyncAction = "async_action"
	TypeForward     = "forward"
)

// Auth operations.
const (
	OperationCreation = "creation"
	OperationOverride = "override"
	OperationRefresh  = "refresh"
)

// Event is something the host's application is told about. The Notifier
// turns it into webhooks.
type Event struct {
	EnvironmentID  int64
	IntegrationKey string
	// ConnectionID is empty for events that concern no single connection
	// (a forwarded webhook that matched none).
	ConnectionID string
	// Type is one of the Type constants.
	Type string
	// Operation is the auth operation (creation, override, refresh); empty
	// for other types.
	Operation string
	// Empty marks a sync run that changed nothing.
	Empty bool
	// Unverified marks a forwarded provider webhook that no signature
	// verified (its provider does not sign): anyone who knows the
	// integration's webhook URL may have caused it. The WebhookNotifier
	// marks its deliveries (Delivery.Unverified), whose attempts are then
	// logged sampled, and writes no log entry of its own for it.
	Unverified bool
	// Payload is the body: *AuthPayload, *SyncPayload, *AsyncActionPayload
	// or *ForwardPayload (or any JSON-marshalable value).
	Payload any
}

// Notifier is where events go. Notify is called with the context of the
// change that caused the event; a Notifier that stores the event should do
// it in that transaction (see store.Transactor), so that the event exists if
// and only if the change committed. Delivery is the Notifier's business.
type Notifier interface {
	Notify(ctx context.Context, e Event) error
}

// NotifierFunc adapts a function to a Notifier.
type NotifierFunc func(ctx context.Context, e Event) error

// Notify calls f.
func (f NotifierFunc) Notify(ctx context.Context, e Event) error { return f(ctx, e) }
