package webhooks

import (
	"encoding/json"
	"fmt"
	"time"
)

// DefaultFrom is the default value of every body's "from": receivers
// written for Nango check it, so they keep working unchanged.
const DefaultFrom = "nango"

// TimeFormat is the format of the timestamps in webhook bodies: ISO 8601 in
// UTC with milliseconds, as JavaScript's Date.toISOString writes them.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// AuthPayload is the body of an auth webhook: a connection was created or
// re-authorized, or refreshing its token failed. Its JSON is
//
//	{from, type:"auth", connectionId, authMode, providerConfigKey, provider,
//	 environment, operation, success, error?:{type, description}, tags?,
//	 endUser?:{endUserId, organizationId?, endUserEmail?, tags}}
type AuthPayload struct {
	// From is set by the Notifier when empty (Config.WebhookFrom, "nango"
	// by default).
	From string `json:"from"`
	// Type is "auth"; the Notifier sets it.
	Type         string `json:"type"`
	ConnectionID string `json:"connectionId"`
	// AuthMode is the connection's auth mode, such as OAUTH2 or API_KEY.
	AuthMode string `json:"authMode"`
	// ProviderConfigKey is the integration's unique key.
	ProviderConfigKey string `json:"providerConfigKey"`
	Provider          string `json:"provider"`
	// Environment is the environment's name.
	Environment string `json:"environment"`
	// Operation is creation, override or refresh (Nango also defines
	// deletion and unknown).
	Operation string `json:"operation"`
	Success   bool   `json:"success"`
	// Error says why the operation failed; nil on success.
	Error *ErrorPayload `json:"error,omitempty"`
	// Tags are the connection's tags (those of the connect session that
	// created it), so that the receiver can link the connection id to its
	// user or organization.
	Tags    map[string]string `json:"tags,omitempty"`
	EndUser *EndUser          `json:"endUser,omitempty"`
}

// ErrorPayload is the "error" of a failed auth or sync webhook.
type ErrorPayload struct {
	Type        string `json:"type"`
	Description string `json:"description"`
}

// EndUser identifies the end user of an auth webhook's connection.
type EndUser struct {
	EndUserID      string `json:"endUserId"`
	OrganizationID string `json:"organizationId,omitempty"`
	EndUserEmail   string `json:"endUserEmail,omitempty"`
	// Tags are always present in the JSON: nil is written as {}.
	Tags map[string]string `json:"tags"`
}

// MarshalJSON writes nil Tags as {}.
func (u EndUser) MarshalJSON() ([]byte, error) {
	type plain EndUser
	if u.Tags == nil {
		u.Tags = map[string]string{}
	}
	return json.Marshal(plain(u))
}

// Sync types, the value of SyncPayload.SyncType. WEBHOOK marks a run started
// by an incoming provider webhook; such runs are always incremental.
const (
	SyncTypeInitial     = "INITIAL"
	SyncTypeIncremental = "INCREMENTAL"
	SyncTypeWebhook     = "WEBHOOK"
)

// SyncPayload is the body of a sync webhook, sent when a sync run finishes,
// successfully or not. Its JSON has the common fields
//
//	{from, type:"sync", connectionId, providerConfigKey, syncName,
//	 syncVariant, model, syncType, checkpoints?, success}
//
// and, when Success is true, modifiedAfter, responseResults:{added,
// updated, deleted} and queryTimeStamp (null when QueryTimeStamp is nil);
// when Success is false, error:{type, description}, startedAt and failedAt.
// The fields of the other outcome are not written.
type SyncPayload struct {
	From              string `json:"from"`
	Type              string `json:"type"`
	ConnectionID      string `json:"connectionId"`
	ProviderConfigKey string `json:"providerConfigKey"`
	SyncName          string `json:"syncName"`
	// SyncVariant is "base" for the default variant.
	SyncVariant string `json:"syncVariant"`
	Model       string `json:"model"`
	// SyncType is INITIAL, INCREMENTAL or WEBHOOK (deprecated in Nango,
	// still sent).
	SyncType string `json:"syncType"`
	// Checkpoints are the run's checkpoints; nil omits the field. A nil
	// From means no prior state: the receiver treats the run as a full
	// sync.
	Checkpoints *Checkpoints `json:"checkpoints,omitempty"`
	Success     bool         `json:"success"`

	// On success.

	// ModifiedAfter is the start of the run: fetch the records changed
	// since then.
	ModifiedAfter time.Time
	// ResponseResults counts the changes per kind; zero in an empty sync.
	ResponseResults SyncResults
	// QueryTimeStamp is when the records can be queried from; nil is null.
	QueryTimeStamp *time.Time

	// On failure.

	Error     *ErrorPayload
	StartedAt time.Time
	FailedAt  time.Time
}

// Checkpoints are a sync run's checkpoints before (From) and after (To) the
// run. Each is null or an object of key to string, number or boolean.
type Checkpoints struct {
	From map[string]any `json:"from"`
	To   map[string]any `json:"to"`
}

// SyncResults counts a sync run's changes to one model.
type SyncResults struct {
	Added   int `json:"added"`
	Updated int `json:"updated"`
	Deleted int `json:"deleted"`
}

// MarshalJSON writes the common fields and those of the run's outcome.
func (p SyncPayload) MarshalJSON() ([]byte, error) {
	type common struct {
		From              string       `json:"from"`
		Type              string       `json:"type"`
		ConnectionID      string       `json:"connectionId"`
		ProviderConfigKey string       `json:"providerConfigKey"`
		SyncName          string       `json:"syncName"`
		SyncVariant       string       `json:"syncVariant"`
		Model             string       `json:"model"`
		SyncType          string       `json:"syncType"`
		Checkpoints       *Checkpoints `json:"checkpoints,omitempty"`
		Success           bool         `json:"success"`
	}
	c := common{p.From, p.Type, p.ConnectionID, p.ProviderConfigKey, p.SyncName, p.SyncVariant, p.Model,
		p.SyncType, p.Checkpoints, p.Success}
	if p.Success {
		var qts *string
		if p.QueryTimeStamp != nil {
			s := formatTime(*p.QueryTimeStamp)
			qts = &s
		}
		return json.Marshal(struct {
			common
			ModifiedAfter   string      `json:"modifiedAfter"`
			ResponseResults SyncResults `json:"responseResults"`
			QueryTimeStamp  *string     `json:"queryTimeStamp"`
		}{c, formatTime(p.ModifiedAfter), p.ResponseResults, qts})
	}
	e := p.Error
	if e == nil {
		e = &ErrorPayload{}
	}
	return json.Marshal(struct {
		common
		Error     *ErrorPayload `json:"error"`
		StartedAt string        `json:"startedAt"`
		FailedAt  string        `json:"failedAt"`
	}{c, e, formatTime(p.StartedAt), formatTime(p.FailedAt)})
}

// AsyncActionPayload is the body of an async action webhook, sent when an
// action triggered asynchronously completes. Its JSON is
//
//	{from, type:"async_action", connectionId, providerConfigKey,
//	 payload:{id, statusUrl}}
type AsyncActionPayload struct {
	From              string            `json:"from"`
	Type              string            `json:"type"`
	ConnectionID      string            `json:"connectionId"`
	ProviderConfigKey string            `json:"providerConfigKey"`
	Payload           AsyncActionResult `json:"payload"`
}

// AsyncActionResult points at the outcome of an async action.
type AsyncActionResult struct {
	// ID is the action run's id, as returned when it was triggered.
	ID string `json:"id"`
	// StatusURL is where the result is fetched from.
	StatusURL string `json:"statusUrl"`
}

// ForwardPayload is the body of a forwarded provider webhook. Its JSON is
//
//	{from, type:"forward", connectionId?, providerConfigKey, payload}
//
// It is sent whether or not a connection matched: then connectionId is
// omitted.
type ForwardPayload struct {
	From string `json:"from"`
	Type string `json:"type"`
	// ConnectionID is the matched connection; empty omits the field.
	ConnectionID      string `json:"connectionId,omitempty"`
	ProviderConfigKey string `json:"providerConfigKey"`
	// Payload is the provider's webhook body: a json.RawMessage of the
	// raw JSON, or any value that marshals to JSON.
	Payload any `json:"payload"`
}

// prepare returns a copy of a known payload with From (when empty) and Type
// set, and checks that its type agrees with the event's. Other values are
// returned unchanged.
func prepare(payload any, eventType, from string) (any, error) {
	check := func(typ string) error {
		if eventType != typ {
			return fmt.Errorf("webhooks: event type %q does not match a %s payload", eventType, typ)
		}
		return nil
	}
	setFrom := func(f *string) {
		if *f == "" {
			*f = from
		}
	}
	switch p := payload.(type) {
	case *AuthPayload:
		if p == nil {
			return nil, fmt.Errorf("webhooks: nil *AuthPayload")
		}
		return prepare(*p, eventType, from)
	case AuthPayload:
		setFrom(&p.From)
		p.Type = TypeAuth
		return p, check(TypeAuth)
	case *SyncPayload:
		if p == nil {
			return nil, fmt.Errorf("webhooks: nil *SyncPayload")
		}
		return prepare(*p, eventType, from)
	case SyncPayload:
		setFrom(&p.From)
		p.Type = TypeSync
		return p, check(TypeSync)
	case *AsyncActionPayload:
		if p == nil {
			return nil, fmt.Errorf("webhooks: nil *AsyncActionPayload")
		}
		return prepare(*p, eventType, from)
	case AsyncActionPayload:
		setFrom(&p.From)
		p.Type = TypeAsyncAction
		return p, check(TypeAsyncAction)
	case *ForwardPayload:
		if p == nil {
			return nil, fmt.Errorf("webhooks: nil *ForwardPayload")
		}
		return prepare(*p, eventType, from)
	case ForwardPayload:
		setFrom(&p.From)
		p.Type = TypeForward
		return p, check(TypeForward)
	case nil:
		return nil, fmt.Errorf("webhooks: event of type %q has no payload", eventType)
	}
	return payload, nil
}
