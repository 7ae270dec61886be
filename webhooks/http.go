package webhooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

// Routes registers the deliveries API, for the API key's environment:
//
//	GET  /webhooks/deliveries              list, newest first (environment:webhooks:read)
//	GET  /webhooks/deliveries/{id}         one delivery with its body (environment:webhooks:read)
//	POST /webhooks/deliveries/{id}/resend  send one again (environment:webhooks:write)
//	POST /webhooks/deliveries/resend       send failed ones again, in bounded batches (environment:webhooks:write)
//
// The list takes the query parameters status (pending, delivered or
// failed), type, integration_id, connection_id, limit (1 to 1000, default
// 100) and cursor (the next_cursor of the page before), and answers
// {"data": [delivery...], "next_cursor": string or null}. Listed
// deliveries have no body (it may hold customer data); GET of one has it.
// No answer holds the signing key or a signature. The bulk resend takes an
// optional JSON body {"type", "integration_id", "connection_id", "status"
// (only "failed"), "limit" (1 to 1000, default 1000)} and answers
// {"data": {"resent": n, "has_more": bool}}: while has_more is true, more
// failed deliveries match and another call resends the next batch.
func (o *Outbox) Routes(rt *httpapi.Router) {
	rt.Handle(httpapi.Route{
		Pattern: "GET /webhooks/deliveries",
		Scope:   environments.ScopeWebhooksRead,
		Handler: func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			f, err := listQuery(r)
			if err != nil {
				return err
			}
			// Listed deliveries carry no body: do not read them.
			f.EnvironmentID, f.OmitBody = p.EnvironmentID, true
			page, err := o.List(r.Context(), f)
			if err != nil {
				return err
			}
			out := listAnswer{Data: make([]apiDelivery, len(page.Deliveries))}
			for i, d := range page.Deliveries {
				out.Data[i] = wireDelivery(d, false)
			}
			if page.Next != nil {
				c := page.Next.String()
				out.NextCursor = &c
			}
			httpapi.WriteJSON(w, http.StatusOK, out)
			return nil
		},
	})
	rt.Handle(httpapi.Route{
		Pattern: "GET /webhooks/deliveries/{id}",
		Scope:   environments.ScopeWebhooksRead,
		Handler: func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			id, err := pathID(r)
			if err != nil {
				return err
			}
			d, err := o.Get(r.Context(), p.EnvironmentID, id)
			if err != nil {
				return err
			}
			httpapi.WriteJSON(w, http.StatusOK, map[string]apiDelivery{"data": wireDelivery(d, true)})
			return nil
		},
	})
	rt.Handle(httpapi.Route{
		Pattern: "POST /webhooks/deliveries/{id}/resend",
		Scope:   environments.ScopeWebhooksWrite,
		Handler: func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			id, err := pathID(r)
			if err != nil {
				return err
			}
			d, err := o.Resend(r.Context(), p.EnvironmentID, id)
			if err != nil {
				return err
			}
			httpapi.WriteJSON(w, http.StatusOK, map[string]apiDelivery{"data": wireDelivery(d, false)})
			return nil
		},
	})
	rt.Handle(httpapi.Route{
		Pattern: "POST /webhooks/deliveries/resend",
		Scope:   environments.ScopeWebhooksWrite,
		Handler: func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			f, limit, err := resendBody(r)
			if err != nil {
				return err
			}
			f.EnvironmentID = p.EnvironmentID
			res, err := o.ResendFailed(r.Context(), f, limit)
			if err != nil {
				return err
			}
			httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"resent": res.Resent, "has_more": res.More}})
			return nil
		},
	})
}

// apiDelivery is a delivery on the wire. Body is only in the answer of GET
// /webhooks/deliveries/{id}.
type apiDelivery struct {
	ID      string `json:"id"`
	EventID string `json:"event_id"`
	Type    string `json:"type"`
	// ProviderConfigKey is the integration's unique key; null for an
	// event of no integration.
	ProviderConfigKey *string `json:"provider_config_key"`
	// ConnectionID is null for an event of no connection.
	ConnectionID *string `json:"connection_id"`
	// URL is the destination, its password hidden.
	URL      string `json:"url"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
	// LastStatusCode is null before the first answer, and after a network
	// error.
	LastStatusCode *int    `json:"last_status_code"`
	LastError      *string `json:"last_error"`
	CreatedAt      string  `json:"created_at"`
	UpdatedAt      string  `json:"updated_at"`
	DeliveredAt    *string `json:"delivered_at"`
	// NextAttemptAt is when a pending delivery is next attempted; null
	// when it is not pending, or due at once.
	NextAttemptAt *string `json:"next_attempt_at"`
	// Unverified marks the forward of a provider webhook that no
	// signature verified: its attempts are logged sampled.
	Unverified bool `json:"unverified"`
	// Body is the webhook's body as sent: a JSON value (or, for a body
	// that is not JSON, a string).
	Body any `json:"body,omitempty"`
}

type listAnswer struct {
	Data       []apiDelivery `json:"data"`
	NextCursor *string       `json:"next_cursor"`
}

func wireDelivery(d *Delivery, withBody bool) apiDelivery {
	nonEmpty := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	a := apiDelivery{
		ID:                d.ID,
		EventID:           d.EventID,
		Type:              d.Type,
		ProviderConfigKey: nonEmpty(d.IntegrationKey),
		ConnectionID:      nonEmpty(d.ConnectionID),
		URL:               redactURL(d.URL),
		Status:            d.Status,
		Attempts:          d.Attempts,
		LastError:         nonEmpty(d.LastError),
		CreatedAt:         httpapi.Time(d.CreatedAt),
		UpdatedAt:         httpapi.Time(d.UpdatedAt),
		DeliveredAt:       httpapi.TimePtr(d.DeliveredAt),
		Unverified:        d.Unverified,
	}
	if d.LastStatusCode != 0 {
		code := d.LastStatusCode
		a.LastStatusCode = &code
	}
	if d.Status == StatusPending && !d.NextAttemptAt.IsZero() {
		a.NextAttemptAt = httpapi.TimePtr(&d.NextAttemptAt)
	}
	if withBody {
		if json.Valid(d.Body) {
			a.Body = json.RawMessage(d.Body)
		} else {
			a.Body = strings.ToValidUTF8(string(d.Body), "\uFFFD")
		}
	}
	return a
}

// listQueryParams are the query parameters of the list.
var listQueryParams = []string{"status", "type", "integration_id", "connection_id", "limit", "cursor"}

// listQuery reads the list's query: each parameter at most once, none
// unknown. An empty value is the same as none.
func listQuery(r *http.Request) (DeliveryFilter, error) {
	var f DeliveryFilter
	q := r.URL.Query()
	for name, vs := range q {
		known := false
		for _, k := range listQueryParams {
			known = known || k == name
		}
		switch {
		case !known:
			return f, httpapi.InvalidQuery(name, fmt.Sprintf("unknown parameter; the list takes %s", strings.Join(listQueryParams, ", ")))
		case len(vs) > 1:
			return f, httpapi.InvalidQuery(name, "given more than once")
		}
	}
	f.Status, f.Type, f.IntegrationKey, f.ConnectionID = q.Get("status"), q.Get("type"), q.Get("integration_id"), q.Get("connection_id")
	if err := checkFilter(f, MaxListLimit); err != nil {
		return f, asQueryError(err)
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxListLimit {
			return f, httpapi.InvalidQuery("limit", fmt.Sprintf("must be an integer from 1 to %d", MaxListLimit))
		}
		f.Limit = n
	}
	if v := q.Get("cursor"); v != "" {
		c, err := ParseDeliveryCursor(v)
		if err != nil {
			return f, httpapi.InvalidQuery("cursor", "not a next_cursor of this list")
		}
		f.After = &c
	}
	return f, nil
}

// asQueryError turns a filter error into the error of a query parameter.
func asQueryError(err error) error {
	if e, ok := err.(*store.Error); ok && len(e.Errors) == 1 {
		return httpapi.InvalidQuery(e.Errors[0].Path[0], e.Errors[0].Message)
	}
	return err
}

// pathID reads the {id} of a path: 1 to 255 characters without control
// characters.
func pathID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !validText(id) {
		return "", store.Invalid("invalid_path_params", "The path is invalid.", store.FieldError{Code: "invalid_value",
			Message: fmt.Sprintf("the delivery id must be 1 to %d characters without control characters", maxTextLen), Path: []string{"id"}})
	}
	return id, nil
}

// resendFields are the fields of the bulk resend's body.
var resendFields = []string{"status", "type", "integration_id", "connection_id", "limit"}

// resendBody reads the optional body of the bulk resend. Every field may be
// absent or null; an unknown field is refused.
func resendBody(r *http.Request) (DeliveryFilter, int, error) {
	var f DeliveryFilter
	b, err := httpapi.ReadBody(r)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return f, 0, err
	}
	var fields map[string]json.RawMessage
	if err := httpapi.Unmarshal(b, &fields); err != nil {
		return f, 0, err
	}
	for name := range fields {
		known := false
		for _, k := range resendFields {
			known = known || k == name
		}
		if !known {
			return f, 0, httpapi.InvalidField(fmt.Sprintf("unknown field; the body takes %s", strings.Join(resendFields, ", ")), name)
		}
	}
	var body struct {
		Status        *string `json:"status"`
		Type          *string `json:"type"`
		IntegrationID *string `json:"integration_id"`
		ConnectionID  *string `json:"connection_id"`
		Limit         *int    `json:"limit"`
	}
	if err := httpapi.Unmarshal(b, &body); err != nil {
		return f, 0, err
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	f.Status, f.Type, f.IntegrationKey, f.ConnectionID = str(body.Status), str(body.Type), str(body.IntegrationID), str(body.ConnectionID)
	if f.Status != "" && f.Status != StatusFailed {
		return f, 0, httpapi.InvalidField("must be failed: only failed deliveries are resent in bulk", "status")
	}
	for _, c := range []struct {
		name string
		p    *string
	}{{"type", body.Type}, {"integration_id", body.IntegrationID}, {"connection_id", body.ConnectionID}} {
		if c.p != nil && !validText(*c.p) {
			return f, 0, httpapi.InvalidField(fmt.Sprintf("must be 1 to %d characters without control characters", maxTextLen), c.name)
		}
	}
	limit := 0
	if body.Limit != nil {
		if *body.Limit < 1 || *body.Limit > MaxResendBatch {
			return f, 0, httpapi.InvalidField(fmt.Sprintf("must be an integer from 1 to %d", MaxResendBatch), "limit")
		}
		limit = *body.Limit
	}
	return f, limit, nil
}
