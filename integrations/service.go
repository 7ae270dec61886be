package integrations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/internal/secret"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

const (
	purposeCredentials = "integration.credentials"
	purposeCustom      = "integration.custom"
)

// CodeProviderUnusable is the error code of a request refused because it
// needs a provider the catalogue lists as unusable (see
// [Catalog.Unusable]): creating an integration for it, or a connection to
// an integration of it. The status is 400.
const CodeProviderUnusable = "provider_unusable"

// UnusableProviderError returns the 400 error, code provider_unusable,
// for a request that needs the provider name when catalog lists it as
// unusable; its message gives the reason. It returns nil when the provider
// is usable or not in the catalogue.
func UnusableProviderError(catalog *Catalog, name string) error {
	var u *UnusableError
	if !errors.As(catalog.Unusable(name), &u) {
		return nil
	}
	return store.Invalid(CodeProviderUnusable, fmt.Sprintf("The provider %q cannot be used: %s.", name, u.Reason()),
		store.FieldError{Code: CodeProviderUnusable, Message: u.Reason(), Path: []string{"provider"}})
}

// ConnectionCounter counts an integration's connections; the Store
// implements it.
type ConnectionCounter interface {
	CountConnections(ctx context.Context, environmentID int64, integrationKey string) (int, error)
}

// Service manages integrations.
type Service struct {
	store   Store
	conns   ConnectionCounter
	catalog *Catalog
	keyring *secret.Keyring
	log     *oplog.Writer
	now     func() time.Time

	publicURL string // set by Routes
	logoBase  string // set by SetLogoBaseURL
}

// NewService is called by connect.New.
func NewService(st Store, conns ConnectionCounter, catalog *Catalog, keyring *secret.Keyring, log *oplog.Writer, now func() time.Time) *Service {
	return &Service{store: st, conns: conns, catalog: catalog, keyring: keyring, log: log, now: now}
}

// Catalog returns the provider catalogue.
func (s *Service) Catalog() *Catalog { return s.catalog }

var keyRe = regexp.MustCompile(`^[A-Za-z0-9~:.@ _-]{1,255}$`)

// ValidKey reports whether k can be an integration unique key: 1 to 255
// letters, digits, spaces or any of ~:.@_-.
func ValidKey(k string) bool { return keyRe.MatchString(k) && strings.TrimSpace(k) == k }

// CreateInput describes a new integration.
type CreateInput struct {
	Provider    string            `json:"provider"`
	UniqueKey   string            `json:"unique_key"`
	DisplayName string            `json:"display_name"`
	Credentials *Credentials      `json:"credentials"`
	Config      map[string]string `json:"integration_config"`
	Custom      map[string]string `json:"custom"`
	// ForwardWebhooks defaults to true.
	ForwardWebhooks *bool `json:"forward_webhooks"`
}

// UpdateInput changes an integration; nil fields stay as they are.
type UpdateInput struct {
	UniqueKey       *string            `json:"unique_key"`
	DisplayName     *string            `json:"display_name"`
	ForwardWebhooks *bool              `json:"forward_webhooks"`
	Credentials     *Credentials       `json:"credentials"`
	Config          *map[string]string `json:"integration_config"`
	Custom          *map[string]string `json:"custom"`
}

func (s *Service) nowUTC() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Create creates an integration.
func (s *Service) Create(ctx context.Context, environmentID int64, in CreateInput) (*Integration, error) {
	if in.Provider == "" {
		return nil, httpapi.InvalidField("is required", "provider")
	}
	p, ok := s.catalog.Get(in.Provider)
	if !ok {
		if err := UnusableProviderError(s.catalog, in.Provider); err != nil {
			return nil, err
		}
		return nil, store.Invalid("invalid_body", fmt.Sprintf("Unknown provider %q.", in.Provider), store.FieldError{
			Code: "unknown_provider", Message: "unknown provider", Path: []string{"provider"},
		})
	}
	if in.UniqueKey == "" {
		return nil, httpapi.InvalidField("is required", "unique_key")
	}
	if !ValidKey(in.UniqueKey) {
		return nil, httpapi.InvalidField("must be 1 to 255 letters, digits, spaces or ~:.@_- without leading or trailing space", "unique_key")
	}
	if err := validateDisplayName(in.DisplayName); err != nil {
		return nil, err
	}
	if err := validateCredentials(p, in.Credentials); err != nil {
		return nil, err
	}
	if err := validateMap(in.Config, "integration_config"); err != nil {
		return nil, err
	}
	if err := noSecretConfig(p, in.Config); err != nil {
		return nil, err
	}
	if err := validateMap(in.Custom, "custom"); err != nil {
		return nil, err
	}
	now := s.nowUTC()
	it := &Integration{
		EnvironmentID:     environmentID,
		UniqueKey:         in.UniqueKey,
		Provider:          p.Name,
		DisplayName:       in.DisplayName,
		ForwardWebhooks:   in.ForwardWebhooks == nil || *in.ForwardWebhooks,
		IntegrationConfig: copyMap(in.Config),
		Credentials:       in.Credentials,
		Custom:            copyMap(in.Custom),
		CreatedAt:         now,
		UpdatedAt:         now,
	}
	if err := s.seal(ctx, it); err != nil {
		return nil, err
	}
	err := s.store.WithTx(ctx, func(ctx context.Context) error {
		if err := s.store.CreateIntegration(ctx, it); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return store.Conflict("duplicate_integration", "An integration with the unique key %q already exists.", in.UniqueKey)
			}
			return err
		}
		_, err := s.log.Record(ctx, &oplog.Entry{EnvironmentID: environmentID, Type: "integration", Operation: "create",
			IntegrationKey: it.UniqueKey, Message: "integration created", Meta: map[string]any{"provider": it.Provider}})
		return err
	})
	if err != nil {
		return nil, err
	}
	return it, nil
}

// Get returns an integration with its credentials opened.
func (s *Service) Get(ctx context.Context, environmentID int64, key string) (*Integration, error) {
	it, err := s.store.GetIntegration(ctx, environmentID, key)
	if err != nil {
		return nil, notFound(err, key)
	}
	if err := s.open(it); err != nil {
		return nil, err
	}
	return it, nil
}

// List returns the environment's integrations, without credentials.
func (s *Service) List(ctx context.Context, environmentID int64) ([]*Integration, error) {
	return s.store.ListIntegrations(ctx, environmentID)
}

// Update changes the passed fields of an integration. Renaming an integration
// that has connections is refused with code integration_has_connections.
func (s *Service) Update(ctx context.Context, environmentID int64, key string, in UpdateInput) (*Integration, error) {
	var out *Integration
	err := s.store.WithTx(ctx, func(ctx context.Context) error {
		it, err := s.store.GetIntegration(ctx, environmentID, key)
		if err != nil {
			return notFound(err, key)
		}
		if err := s.open(it); err != nil {
			return err
		}
		p, ok := s.catalog.Get(it.Provider)
		if !ok {
			p = &Provider{Name: it.Provider}
		}
		changed := []string{}
		if in.UniqueKey != nil && *in.UniqueKey != it.UniqueKey {
			if !ValidKey(*in.UniqueKey) {
				return httpapi.InvalidField("must be 1 to 255 letters, digits, spaces or ~:.@_- without leading or trailing space", "unique_key")
			}
			n, err := s.conns.CountConnections(ctx, environmentID, it.UniqueKey)
			if err != nil {
				return err
			}
			if n > 0 {
				return store.Conflict("integration_has_connections",
					"The integration %q has %d connection(s) and cannot be renamed; delete them first.", it.UniqueKey, n)
			}
			it.UniqueKey = *in.UniqueKey
			changed = append(changed, "unique_key")
		}
		if in.DisplayName != nil {
			if err := validateDisplayName(*in.DisplayName); err != nil {
				return err
			}
			it.DisplayName = *in.DisplayName
			changed = append(changed, "display_name")
		}
		if in.ForwardWebhooks != nil {
			it.ForwardWebhooks = *in.ForwardWebhooks
			changed = append(changed, "forward_webhooks")
		}
		if in.Credentials != nil {
			if err := validateCredentials(p, in.Credentials); err != nil {
				return err
			}
			it.Credentials = in.Credentials
			changed = append(changed, "credentials")
		}
		if in.Config != nil {
			if err := validateMap(*in.Config, "integration_config"); err != nil {
				return err
			}
			if err := noSecretConfig(p, *in.Config); err != nil {
				return err
			}
			it.IntegrationConfig = copyMap(*in.Config)
			changed = append(changed, "integration_config")
		}
		if in.Custom != nil {
			if err := validateMap(*in.Custom, "custom"); err != nil {
				return err
			}
			it.Custom = copyMap(*in.Custom)
			changed = append(changed, "custom")
		}
		it.UpdatedAt = s.nowUTC()
		if err := s.seal(ctx, it); err != nil {
			return err
		}
		if err := s.store.UpdateIntegration(ctx, it); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return store.Conflict("duplicate_integration", "An integration with the unique key %q already exists, or the integration has connections.", it.UniqueKey)
			}
			return notFound(err, key)
		}
		sort.Strings(changed)
		if _, err := s.log.Record(ctx, &oplog.Entry{EnvironmentID: environmentID, Type: "integration", Operation: "update",
			IntegrationKey: it.UniqueKey, Message: "integration updated", Meta: map[string]any{"changed": changed, "previous_key": key}}); err != nil {
			return err
		}
		out = it
		return nil
	})
	return out, err
}

// Delete deletes an integration and all its connections.
func (s *Service) Delete(ctx context.Context, environmentID int64, key string) error {
	return s.store.WithTx(ctx, func(ctx context.Context) error {
		if err := s.store.DeleteIntegration(ctx, environmentID, key); err != nil {
			return notFound(err, key)
		}
		_, err := s.log.Record(ctx, &oplog.Entry{EnvironmentID: environmentID, Type: "integration", Operation: "delete",
			IntegrationKey: key, Message: "integration deleted"})
		return err
	})
}

// Reseal re-seals the secrets of every integration of the environment that
// are not sealed under the primary key, returning how many values changed.
func (s *Service) Reseal(ctx context.Context, environmentID int64) (int, error) {
	list, err := s.store.ListIntegrations(ctx, environmentID)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range list {
		if !s.keyring.NeedsReseal(l.SealedCredentials) && !s.keyring.NeedsReseal(l.SealedCustom) {
			continue
		}
		err := s.store.WithTx(ctx, func(ctx context.Context) error {
			it, err := s.store.GetIntegration(ctx, environmentID, l.UniqueKey)
			if err != nil {
				return err
			}
			if err := s.open(it); err != nil {
				return err
			}
			if err := s.seal(ctx, it); err != nil {
				return err
			}
			return s.store.UpdateIntegration(ctx, it)
		})
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (s *Service) seal(ctx context.Context, it *Integration) error {
	it.SealedCredentials, it.SealedCustom = "", ""
	if it.Credentials != nil {
		b, _ := json.Marshal(it.Credentials)
		v, err := s.keyring.Seal(ctx, purposeCredentials, b)
		if err != nil {
			return err
		}
		it.SealedCredentials = v
	}
	if len(it.Custom) > 0 {
		b, _ := json.Marshal(it.Custom)
		v, err := s.keyring.Seal(ctx, purposeCustom, b)
		if err != nil {
			return err
		}
		it.SealedCustom = v
	}
	return nil
}

func (s *Service) open(it *Integration) error {
	it.Credentials, it.Custom = nil, nil
	if it.SealedCredentials != "" {
		b, err := s.keyring.Open(purposeCredentials, it.SealedCredentials)
		if err != nil {
			return fmt.Errorf("open credentials of integration %q: %w", it.UniqueKey, err)
		}
		it.Credentials = new(Credentials)
		if err := json.Unmarshal(b, it.Credentials); err != nil {
			return fmt.Errorf("decode credentials of integration %q: %w", it.UniqueKey, err)
		}
	}
	if it.SealedCustom != "" {
		b, err := s.keyring.Open(purposeCustom, it.SealedCustom)
		if err != nil {
			return fmt.Errorf("open custom of integration %q: %w", it.UniqueKey, err)
		}
		if err := json.Unmarshal(b, &it.Custom); err != nil {
			return fmt.Errorf("decode custom of integration %q: %w", it.UniqueKey, err)
		}
	}
	return nil
}

func notFound(err error, key string) error {
	if errors.Is(err, store.ErrNotFound) {
		return store.NotFound("unknown_provider_config", "The integration %q was not found.", key)
	}
	return err
}

func validateDisplayName(n string) error {
	if utf8.RuneCountInString(n) > 255 || !utf8.ValidString(n) {
		return httpapi.InvalidField("must be at most 255 characters", "display_name")
	}
	return nil
}

func validateMap(m map[string]string, field string) error {
	if len(m) > 100 {
		return httpapi.InvalidField("must have at most 100 keys", field)
	}
	for k, v := range m {
		if k == "" || len(k) > 255 {
			return httpapi.InvalidField("keys must be 1 to 255 characters", field)
		}
		if len(v) > 16<<10 {
			return httpapi.InvalidField("values must be at most 16 KiB", field, k)
		}
	}
	return nil
}

// noSecretConfig refuses a value in integration_config for a field the
// provider's integration_config schema marks secret (AWS SigV4's
// awsSecretAccessKey, for example): integration_config is stored and
// served as it is, so secrets go in custom, which is sealed and never
// served.
func noSecretConfig(p *Provider, m map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if f, ok := p.IntegrationConfig[k]; ok && f.Secret && m[k] != "" {
			return httpapi.InvalidField(fmt.Sprintf("%s is a secret: send it in custom, which is sealed and never served", k), "integration_config", k)
		}
	}
	return nil
}

// validateCredentials checks app credentials against the provider's auth mode.
func validateCredentials(p *Provider, c *Credentials) error {
	if c == nil {
		return nil
	}
	req := func(v, name string) error {
		if strings.TrimSpace(v) == "" {
			return httpapi.InvalidField("is required", "credentials", name)
		}
		if len(v) > 64<<10 {
			return httpapi.InvalidField("is too long", "credentials", name)
		}
		return nil
	}
	switch c.Type {
	case "OAUTH1", "OAUTH2", "TBA":
		if p.AuthMode != "" && !compatible(p.AuthMode, c.Type) {
			return httpapi.InvalidField(fmt.Sprintf("type %s does not match the provider's auth mode %s", c.Type, p.AuthMode), "credentials", "type")
		}
		if err := req(c.ClientID, "client_id"); err != nil {
			return err
		}
		if err := req(c.ClientSecret, "client_secret"); err != nil {
			return err
		}
	case "APP":
		if p.AuthMode != "" && p.AuthMode != "APP" && p.AuthMode != "CUSTOM" {
			return httpapi.InvalidField(fmt.Sprintf("type APP does not match the provider's auth mode %s", p.AuthMode), "credentials", "type")
		}
		for _, f := range [][2]string{{c.AppID, "app_id"}, {c.AppLink, "app_link"}, {c.PrivateKey, "private_key"}} {
			if err := req(f[0], f[1]); err != nil {
				return err
			}
		}
	case "CUSTOM":
		for _, f := range [][2]string{{c.ClientID, "client_id"}, {c.ClientSecret, "client_secret"}, {c.AppID, "app_id"}, {c.AppLink, "app_link"}, {c.PrivateKey, "private_key"}} {
			if err := req(f[0], f[1]); err != nil {
				return err
			}
		}
	case "":
		return httpapi.InvalidField("is required (OAUTH1, OAUTH2, TBA, APP or CUSTOM)", "credentials", "type")
	default:
		return httpapi.InvalidField("must be OAUTH1, OAUTH2, TBA, APP or CUSTOM", "credentials", "type")
	}
	return nil
}

func compatible(mode, typ string) bool {
	switch typ {
	case "OAUTH2":
		return mode == "OAUTH2" || mode == "OAUTH2_CC" || mode == "CUSTOM" || mode == "MCP_OAUTH2"
	case "OAUTH1":
		return mode == "OAUTH1"
	case "TBA":
		return mode == "TBA"
	}
	return false
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
