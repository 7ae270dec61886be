package connections

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/internal/secret"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

const purposeCredentials = "connection.credentials"

// Limits of connection fields.
const (
	MaxTagValueLength  = 255
	MaxTagKeyLength    = 64
	MaxTags            = 64
	MaxConnectionIDLen = 255
	// DefaultListLimit is the page size of List when none is given, and
	// the largest allowed.
	DefaultListLimit = 1000
)

// IntegrationLookup finds integrations; the Store implements it.
type IntegrationLookup interface {
	GetIntegration(ctx context.Context, environmentID int64, uniqueKey string) (*integrations.Integration, error)
}

// RefreshFunc refreshes a connection's credentials when they are about to
// expire, or always when force is true, and returns the connection as
// stored afterwards (with its Credentials opened, or nil for Get to open
// them). Without one Get refreshes nothing; EnableRefresh installs the
// built-in one.
type RefreshFunc func(ctx context.Context, c *Connection, force bool) (*Connection, error)

// Service manages connections.
type Service struct {
	store        Store
	integrations IntegrationLookup
	catalog      *integrations.Catalog
	keyring      *secret.Keyring
	log          *oplog.Writer
	now          func() time.Time
	refresh      RefreshFunc
	// refresher is the built-in refresher, when EnableRefresh installed it.
	refresher *refresher
	// maxImportBody limits the body of a bulk import; 0 means
	// DefaultMaxImportBody.
	maxImportBody int64
	// hooks, when set, act on connection changes (SetHooks).
	hooks Hooks
	// webhookURLCheck checks webhook URL overrides when they are set
	// (SetWebhookURLCheck).
	webhookURLCheck environments.WebhookURLCheck
}

// SetWebhookURLCheck installs the check of the webhook URL overrides Patch
// and connect sessions set, after the form checks of ValidateWebhookURL
// (connect.New installs Config.Webhooks.CheckURLField, the webhook
// address policy). Call it before the Service is used.
func (s *Service) SetWebhookURLCheck(f environments.WebhookURLCheck) { s.webhookURLCheck = f }

// checkWebhookURL applies ValidateWebhookURL and the installed check to a
// webhook URL override. It may resolve host names: call it outside
// transactions.
func (s *Service) checkWebhookURL(ctx context.Context, raw string) error {
	if err := ValidateWebhookURL(raw); err != nil {
		return err
	}
	if s.webhookURLCheck == nil {
		return nil
	}
	return s.webhookURLCheck(ctx, raw, "webhook_url_override")
}

// SetMaxImportBody sets the limit of the body of a bulk import (POST
// /connections with an array body); 0 or less means DefaultMaxImportBody.
// A single import's body keeps the API's limit. Call it before Routes.
func (s *Service) SetMaxImportBody(n int64) { s.maxImportBody = n }

// NewService is called by connect.New.
func NewService(st Store, ints IntegrationLookup, catalog *integrations.Catalog, keyring *secret.Keyring, log *oplog.Writer, now func() time.Time) *Service {
	return &Service{store: st, integrations: ints, catalog: catalog, keyring: keyring, log: log, now: now}
}

// SetRefreshFunc installs the refresher used by Get, replacing the
// built-in one of EnableRefresh.
func (s *Service) SetRefreshFunc(f RefreshFunc) { s.refresh, s.refresher = f, nil }

func (s *Service) nowUTC() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// ListInput filters List. Zero fields match anything.
type ListInput struct {
	// ConnectionID matches exactly, possibly in several integrations.
	ConnectionID string
	// IntegrationKeys matches any of them.
	IntegrationKeys []string
	// Tags must all match; keys are compared lowercased.
	Tags map[string]string
	// EndUserID matches the end_user_id tag.
	EndUserID string
	// EndUserOrganizationID matches the organization_id tag.
	EndUserOrganizationID string
	// Search matches connection ids containing it, case-insensitively.
	Search string
	// Status keeps the connections in one state: one of the Health*
	// constants (HealthOK, HealthError, ...); empty keeps all.
	Status string
	// Limit is the page size, 1 to DefaultListLimit (the default).
	Limit int
	// Page counts from 0.
	Page int
	// After continues a listing (in ID order) after the connection with
	// this ID: keyset paging, which neither skips nor repeats connections
	// while others are created or deleted. 0 starts from the first; it
	// cannot be given with a Page.
	After int64
}

// List returns connections without credentials. An unknown Status, or
// both After and Page, is ErrInvalid.
func (s *Service) List(ctx context.Context, environmentID int64, in ListInput) ([]*Connection, error) {
	f, err := listFilter(environmentID, in)
	if err != nil {
		return nil, err
	}
	list, err := s.store.ListConnections(ctx, f)
	if err != nil {
		return nil, err
	}
	for _, c := range list {
		c.Credentials = nil
	}
	return list, nil
}

// ConnectionsPage is one page of a listing of connections (ListPage).
type ConnectionsPage struct {
	// Connections are without credentials, in ID order.
	Connections []*Connection
	// Health is the state of each of Connections, in the same order.
	Health []Health
	// Next is the ID of the last connection when more follow: the
	// ListInput.After of the next page; 0 on the last page.
	Next int64
}

// ListPage returns a page of List with the state of each connection (in
// one more read of the Store for the page, SyncHealth) and the position
// of the next page.
func (s *Service) ListPage(ctx context.Context, environmentID int64, in ListInput) (*ConnectionsPage, error) {
	f, err := listFilter(environmentID, in)
	if err != nil {
		return nil, err
	}
	limit := f.Limit
	// One more than the page tells whether another follows.
	f.Limit++
	list, err := s.store.ListConnections(ctx, f)
	if err != nil {
		return nil, err
	}
	page := &ConnectionsPage{Connections: list}
	if len(list) > limit {
		page.Connections = list[:limit]
		page.Next = list[limit-1].ID
	}
	ids := make([]int64, len(page.Connections))
	for i, c := range page.Connections {
		c.Credentials = nil
		ids[i] = c.ID
	}
	syncs := map[int64]Health{}
	if len(ids) > 0 {
		if syncs, err = s.store.SyncHealth(ctx, ids); err != nil {
			return nil, err
		}
	}
	page.Health = make([]Health, len(page.Connections))
	for i, c := range page.Connections {
		h := syncs[c.ID]
		h.AuthError = slices.ContainsFunc(c.Errors, func(e Error) bool { return e.Type == ErrorTypeAuth })
		page.Health[i] = h
	}
	return page, nil
}

// listFilter returns the Store's filter of a List.
func listFilter(environmentID int64, in ListInput) (Filter, error) {
	f := Filter{EnvironmentID: environmentID, ConnectionID: in.ConnectionID, Search: in.Search, Health: in.Status}
	switch in.Status {
	case "", HealthOK, HealthError, HealthAuthError, HealthSyncError, HealthPaused:
	default:
		return f, store.Invalid("invalid_filter", "The filter is invalid.", store.FieldError{Code: "invalid_value",
			Message: "must be ok, error, auth_error, sync_error or paused", Path: []string{"status"}})
	}
	if in.After < 0 || (in.After != 0 && in.Page != 0) {
		return f, store.Invalid("invalid_filter", "The filter is invalid.", store.FieldError{Code: "invalid_value",
			Message: "a position (cursor) cannot be given with a page", Path: []string{"cursor"}})
	}
	f.AfterID = in.After
	for _, k := range in.IntegrationKeys {
		if k = strings.TrimSpace(k); k != "" {
			f.IntegrationKeys = append(f.IntegrationKeys, k)
		}
	}
	tags := map[string]string{}
	for k, v := range in.Tags {
		tags[strings.ToLower(k)] = v
	}
	if in.EndUserID != "" {
		tags[TagEndUserID] = in.EndUserID
	}
	if in.EndUserOrganizationID != "" {
		tags[TagOrganizationID] = in.EndUserOrganizationID
	}
	if len(tags) > 0 {
		f.Tags = tags
	}
	if in.Limit <= 0 || in.Limit > DefaultListLimit {
		in.Limit = DefaultListLimit
	}
	if in.Page < 0 {
		in.Page = 0
	}
	f.Limit, f.Offset = in.Limit, in.Page*in.Limit
	return f, nil
}

// GetOptions changes what Get does.
type GetOptions struct {
	// ForceRefresh attempts a refresh even when the token is not about to
	// expire (when the connection can be refreshed: OAuth 2 with a refresh
	// token, or client credentials), bypassing the backoff after a failure.
	ForceRefresh bool
	// RefreshGitHubAppJWT forces a new installation token for APP
	// connections (refresh_github_app_jwt_token=true); their tokens are
	// otherwise renewed like OAuth 2 tokens, when near expiry.
	RefreshGitHubAppJWT bool
}

// Get returns a connection with its credentials, refreshing them first when
// a refresher is installed (see EnableRefresh) and they are about to expire,
// or when forced. A failed refresh is an error matching ErrRefreshFailed, a
// read during the backoff after one ErrRefreshBackoff; both are answered
// with HTTP 400.
//
// Do not call Get inside a transaction (Store.WithTx) when it may refresh:
// the refresh would join that transaction, and the tokens it stores would
// be lost if it rolled back, while the provider has rotated them.
func (s *Service) Get(ctx context.Context, environmentID int64, integrationKey, connectionID string, opts GetOptions) (*Connection, error) {
	c, err := s.store.GetConnection(ctx, environmentID, integrationKey, connectionID)
	if err != nil {
		return nil, s.notFound(ctx, err, environmentID, integrationKey, connectionID)
	}
	if s.refresh != nil {
		force := opts.ForceRefresh || (opts.RefreshGitHubAppJWT && c.AuthMode == integrations.AuthModeApp)
		c, err = s.refresh(ctx, c, force)
		if err != nil {
			return nil, err
		}
	}
	if c.Credentials == nil {
		if err := s.open(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// notFound tells an unknown integration from an unknown connection.
func (s *Service) notFound(ctx context.Context, err error, environmentID int64, integrationKey, connectionID string) error {
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if _, ierr := s.integrations.GetIntegration(ctx, environmentID, integrationKey); errors.Is(ierr, store.ErrNotFound) {
		return store.NotFound("unknown_provider_config", "The integration %q was not found.", integrationKey)
	}
	return store.NotFound("not_found", "The connection %q of integration %q was not found.", connectionID, integrationKey)
}

// Delete deletes a connection.
func (s *Service) Delete(ctx context.Context, environmentID int64, integrationKey, connectionID string) error {
	s.beforeDelete(ctx, environmentID, integrationKey, connectionID)
	return s.store.WithTx(ctx, func(ctx context.Context) error {
		if err := s.store.DeleteConnection(ctx, environmentID, integrationKey, connectionID); err != nil {
			return s.notFound(ctx, err, environmentID, integrationKey, connectionID)
		}
		_, err := s.log.Record(ctx, &oplog.Entry{EnvironmentID: environmentID, Type: "connection", Operation: "delete",
			IntegrationKey: integrationKey, ConnectionID: connectionID, Message: "connection deleted"})
		return err
	})
}

// mutate reads a connection, applies fn and writes it back, retrying when a
// concurrent writer got there first. It must run inside a transaction or
// alone.
func (s *Service) mutate(ctx context.Context, environmentID int64, integrationKey, connectionID string, fn func(c *Connection) error) (*Connection, error) {
	return s.update(ctx, environmentID, integrationKey, connectionID, true, fn)
}

// update is mutate with the choice to leave UpdatedAt as it is.
func (s *Service) update(ctx context.Context, environmentID int64, integrationKey, connectionID string, touch bool, fn func(c *Connection) error) (*Connection, error) {
	for attempt := 0; ; attempt++ {
		c, err := s.store.GetConnection(ctx, environmentID, integrationKey, connectionID)
		if err != nil {
			return nil, s.notFound(ctx, err, environmentID, integrationKey, connectionID)
		}
		if err := s.open(c); err != nil {
			return nil, err
		}
		if err := fn(c); err != nil {
			return nil, err
		}
		if touch {
			c.UpdatedAt = s.nowUTC()
		}
		if err := s.seal(ctx, c); err != nil {
			return nil, err
		}
		err = s.store.UpdateConnection(ctx, c)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, store.ErrConflict) || attempt >= 20 {
			return nil, err
		}
	}
}

// SetMetadata replaces (merge false) or merges into (merge true) the
// metadata of each listed connection of the integration. It changes all of
// them or, when one is missing, none.
func (s *Service) SetMetadata(ctx context.Context, environmentID int64, integrationKey string, connectionIDs []string, metadata map[string]any, merge bool) error {
	if len(connectionIDs) == 0 {
		return httpapi.InvalidField("is required", "connection_id")
	}
	if metadata == nil {
		return httpapi.InvalidField("must be an object", "metadata")
	}
	op := "set_metadata"
	if merge {
		op = "update_metadata"
	}
	return s.store.WithTx(ctx, func(ctx context.Context) error {
		for _, id := range connectionIDs {
			_, err := s.mutate(ctx, environmentID, integrationKey, id, func(c *Connection) error {
				if !merge || c.Metadata == nil {
					c.Metadata = map[string]any{}
				}
				for k, v := range metadata {
					c.Metadata[k] = v
				}
				return nil
			})
			if err != nil {
				return err
			}
			if _, err := s.log.Record(ctx, &oplog.Entry{EnvironmentID: environmentID, Type: "connection", Operation: op,
				IntegrationKey: integrationKey, ConnectionID: id, Message: "metadata changed"}); err != nil {
				return err
			}
		}
		return nil
	})
}

// EndUser is the deprecated description of a connection's end user. It is
// stored as the conventional tags.
type EndUser struct {
	ID           string            `json:"id"`
	Email        string            `json:"email,omitempty"`
	DisplayName  string            `json:"display_name,omitempty"`
	Tags         map[string]string `json:"tags,omitempty"`
	Organization *Organization     `json:"organization,omitempty"`
}

// Organization is the deprecated description of an end user's organization.
type Organization struct {
	ID          string `json:"id"`
	DisplayName string `json:"display_name,omitempty"`
}

// Conventional tag keys.
const (
	TagEndUserID               = "end_user_id"
	TagEndUserEmail            = "end_user_email"
	TagEndUserDisplayName      = "end_user_display_name"
	TagOrganizationID          = "organization_id"
	TagOrganizationDisplayName = "organization_display_name"
)

// EndUserTags maps the deprecated end user and organization onto tags.
func EndUserTags(u *EndUser, org *Organization) (map[string]string, error) {
	tags := map[string]string{}
	if u != nil {
		if len(u.Tags) > MaxTags {
			return nil, httpapi.InvalidField(fmt.Sprintf("must have at most %d keys", MaxTags), "end_user", "tags")
		}
		for k, v := range u.Tags {
			tags[k] = v
		}
		if u.ID == "" {
			return nil, httpapi.InvalidField("is required", "end_user", "id")
		}
		tags[TagEndUserID] = u.ID
		if u.Email != "" {
			tags[TagEndUserEmail] = u.Email
		}
		if u.DisplayName != "" {
			tags[TagEndUserDisplayName] = u.DisplayName
		}
		if u.Organization != nil && org == nil {
			org = u.Organization
		}
	}
	if org != nil {
		if org.ID == "" {
			return nil, httpapi.InvalidField("is required", "organization", "id")
		}
		tags[TagOrganizationID] = org.ID
		if org.DisplayName != "" {
			tags[TagOrganizationDisplayName] = org.DisplayName
		}
	}
	return NormalizeTags(tags)
}

// NormalizeTags lowercases tag keys and checks the limits: at most MaxTags
// keys of 1 to MaxTagKeyLength characters, values of at most
// MaxTagValueLength characters.
func NormalizeTags(tags map[string]string) (map[string]string, error) {
	if tags == nil {
		return nil, nil
	}
	if len(tags) > MaxTags {
		return nil, httpapi.InvalidField(fmt.Sprintf("must have at most %d keys", MaxTags), "tags")
	}
	out := make(map[string]string, len(tags))
	for k, v := range tags {
		lk := strings.ToLower(strings.TrimSpace(k))
		if lk == "" || utf8.RuneCountInString(lk) > MaxTagKeyLength || !utf8.ValidString(lk) {
			return nil, httpapi.InvalidField(fmt.Sprintf("keys must be 1 to %d characters", MaxTagKeyLength), "tags", k)
		}
		if utf8.RuneCountInString(v) > MaxTagValueLength || !utf8.ValidString(v) {
			return nil, httpapi.InvalidField(fmt.Sprintf("values must be at most %d characters", MaxTagValueLength), "tags", k)
		}
		out[lk] = v
	}
	return out, nil
}

// PatchInput changes a connection; nil fields stay.
type PatchInput struct {
	Tags *map[string]string `json:"tags"`
	// WebhookURLOverride sets the per-connection webhook URL; an empty
	// string clears it. A URL is checked as SetWebhookURLCheck says.
	WebhookURLOverride *string `json:"webhook_url_override"`
	// EndUser is deprecated; it is stored as the conventional tags.
	EndUser *EndUser `json:"end_user"`
}

// Patch changes a connection's tags, webhook URL override or end user.
func (s *Service) Patch(ctx context.Context, environmentID int64, integrationKey, connectionID string, in PatchInput) (*Connection, error) {
	var tags, endUserTags map[string]string
	var err error
	if in.Tags != nil {
		if tags, err = NormalizeTags(*in.Tags); err != nil {
			return nil, err
		}
	}
	if in.EndUser != nil {
		if endUserTags, err = EndUserTags(in.EndUser, nil); err != nil {
			return nil, err
		}
	}
	if in.WebhookURLOverride != nil && *in.WebhookURLOverride != "" {
		if err := s.checkWebhookURL(ctx, *in.WebhookURLOverride); err != nil {
			return nil, err
		}
	}
	var out *Connection
	err = s.store.WithTx(ctx, func(ctx context.Context) error {
		c, err := s.mutate(ctx, environmentID, integrationKey, connectionID, func(c *Connection) error {
			if in.Tags != nil {
				c.Tags = tags
			}
			if endUserTags != nil {
				if c.Tags == nil {
					c.Tags = map[string]string{}
				}
				for _, k := range []string{TagEndUserID, TagEndUserEmail, TagEndUserDisplayName, TagOrganizationID, TagOrganizationDisplayName} {
					delete(c.Tags, k)
				}
				for k, v := range endUserTags {
					c.Tags[k] = v
				}
				if len(c.Tags) > MaxTags {
					return httpapi.InvalidField(fmt.Sprintf("must have at most %d keys", MaxTags), "tags")
				}
			}
			if in.WebhookURLOverride != nil {
				c.WebhookURLOverride = *in.WebhookURLOverride
			}
			return nil
		})
		if err != nil {
			return err
		}
		out = c
		_, err = s.log.Record(ctx, &oplog.Entry{EnvironmentID: environmentID, Type: "connection", Operation: "update",
			IntegrationKey: integrationKey, ConnectionID: connectionID, Message: "connection updated"})
		return err
	})
	return out, err
}

// ValidateWebhookURL checks a webhook URL override.
func ValidateWebhookURL(raw string) error {
	if len(raw) > 2048 || !(strings.HasPrefix(raw, "https://") || strings.HasPrefix(raw, "http://")) {
		return httpapi.InvalidField("must be an absolute http or https URL of at most 2048 characters", "webhook_url_override")
	}
	if u, err := parseURL(raw); err != nil || u == "" {
		return httpapi.InvalidField("must be an absolute http or https URL of at most 2048 characters", "webhook_url_override")
	}
	return nil
}

// ValidConnectionID reports whether id can be a connection id: 1 to 255
// characters without control characters.
func ValidConnectionID(id string) bool {
	if id == "" || len(id) > MaxConnectionIDLen || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

func (s *Service) seal(ctx context.Context, c *Connection) error {
	if c.Credentials == nil {
		c.SealedCredentials = ""
		return nil
	}
	b, err := json.Marshal(c.Credentials)
	if err != nil {
		return err
	}
	v, err := s.keyring.Seal(ctx, purposeCredentials, b)
	if err != nil {
		return err
	}
	c.SealedCredentials = v
	c.AuthMode = c.Credentials.Type
	c.CredentialsExpiresAt = c.Credentials.ExpiresAt
	return nil
}

func (s *Service) open(c *Connection) error {
	c.Credentials = nil
	if c.SealedCredentials == "" {
		return nil
	}
	b, err := s.keyring.Open(purposeCredentials, c.SealedCredentials)
	if err != nil {
		return fmt.Errorf("open credentials of connection %d: %w", c.ID, err)
	}
	c.Credentials = new(Credentials)
	if err := json.Unmarshal(b, c.Credentials); err != nil {
		return fmt.Errorf("decode credentials of connection %d: %w", c.ID, err)
	}
	return nil
}

// Reseal re-seals the credentials of every connection of the environment
// not sealed under the primary key, returning how many changed.
func (s *Service) Reseal(ctx context.Context, environmentID int64) (int, error) {
	n := 0
	for page := 0; ; page++ {
		list, err := s.store.ListConnections(ctx, Filter{EnvironmentID: environmentID, Page: store.Page{Limit: 500, Offset: page * 500}})
		if err != nil {
			return n, err
		}
		for _, l := range list {
			if !s.keyring.NeedsReseal(l.SealedCredentials) {
				continue
			}
			_, err := s.update(ctx, environmentID, l.IntegrationKey, l.ConnectionID, false, func(*Connection) error { return nil })
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return n, err
			}
			n++
		}
		if len(list) < 500 {
			return n, nil
		}
	}
}

func newConnectionID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
