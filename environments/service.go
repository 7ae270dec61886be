package environments

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/embedauth/connect/internal/cache"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/internal/secret"
	"github.com/embedauth/connect/store"
)

// Purposes bind sealed values to their field.
const (
	purposeSigningKey = "environment.webhook_signing_key"
	purposeVariable   = "environment.variable"
)

// Service manages environments, their API keys, settings and variables.
type Service struct {
	store   Store
	keyring *secret.Keyring
	now     func() time.Time

	// keys maps the SHA-256 of an API key to its principal; signing maps
	// an environment's id to its plaintext webhook signing key.
	keys    *cache.Cache[[32]byte, *httpapi.Principal]
	signing *cache.Cache[int64, string]

	// checkURL checks webhook URLs when they are set (SetWebhookURLCheck).
	checkURL WebhookURLCheck
}

// WebhookURLCheck checks a webhook URL when it is set and returns the
// refusal (a 400 naming path) or nil. webhooks.DeliveryConfig.CheckURLField
// is one: it applies the webhook address policy.
type WebhookURLCheck func(ctx context.Context, rawURL string, path ...string) error

// SetWebhookURLCheck installs the check of the webhook URLs Create and
// Update set, after the form checks of ValidateWebhookURLs (connect.New
// installs Config.Webhooks.CheckURLField). Call it before the Service is
// used.
func (s *Service) SetWebhookURLCheck(f WebhookURLCheck) { s.checkURL = f }

// checkWebhookURLs applies ValidateWebhookURLs and the installed check.
// It may resolve host names: call it outside transactions.
func (s *Service) checkWebhookURLs(ctx context.Context, urls []string) error {
	if err := ValidateWebhookURLs(urls); err != nil {
		return err
	}
	if s.checkURL == nil {
		return nil
	}
	for i, u := range urls {
		if err := s.checkURL(ctx, u, "webhook_urls", strconv.Itoa(i)); err != nil {
			return err
		}
	}
	return nil
}

// NewService is called by connect.New; hosts use the Service it builds.
// keyCacheTTL bounds how long an authenticated API key (and an
// environment's webhook signing key) is remembered in this process: a key
// deleted in another process keeps working here for at most that long. 0
// disables the caches.
//
// The caches are single-flight per key (concurrent requests with a key
// that is not cached read the Store once), refresh a key in use in the
// background during the last quarter of its TTL while it keeps being
// served, and never cache a failure; a refresh that finds the key deleted
// forgets it at once.
func NewService(st Store, keyring *secret.Keyring, now func() time.Time, keyCacheTTL time.Duration) *Service {
	s := &Service{store: st, keyring: keyring, now: now}
	s.keys = cache.New(cache.Config[[32]byte, *httpapi.Principal]{
		Load: s.loadPrincipal,
		TTL:  keyCacheTTL,
		Now:  now,
		Gone: func(err error) bool {
			return errors.Is(err, store.ErrUnauthorized) || errors.Is(err, store.ErrNotFound)
		},
	})
	s.signing = cache.New(cache.Config[int64, string]{
		Load: s.loadSigningKey,
		TTL:  keyCacheTTL,
		Now:  now,
		Gone: func(err error) bool { return errors.Is(err, store.ErrNotFound) },
	})
	return s
}

// WaitRefreshes waits for the reads that refresh its caches in the
// background (each bounded by cache.DefaultRefreshTimeout) to end.
// connect.Service.Stop calls it, so that none runs after the host closes its
// database.
func (s *Service) WaitRefreshes() {
	s.keys.Wait()
	s.signing.Wait()
}

// afterChange runs drop now and, when ctx is inside a transaction of a
// Store that supports it, again once that transaction commits: a request
// that read the record between the two, before the commit, cached what the
// commit replaced.
func (s *Service) afterChange(ctx context.Context, drop func()) {
	drop()
	if h, ok := s.store.(store.CommitHooker); ok {
		h.AfterCommit(ctx, drop)
	}
}

var nameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// CreateInput describes a new environment.
type CreateInput struct {
	// Name is 1 to 63 lowercase letters, digits, '-' or '_'.
	Name string
	// Account defaults to "default".
	Account string
	// WebhookURLs are at most two absolute http(s) URLs, which the
	// installed check also applies to (see SetWebhookURLCheck).
	WebhookURLs []string
	// WebhookSigningKey is at least 16 characters; generated when empty.
	WebhookSigningKey string
	// WebhookSettings defaults to DefaultWebhookSettings.
	WebhookSettings *WebhookSettings
	ConnectUI       *ConnectUISettings
}

func (s *Service) nowUTC() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Create creates an environment.
func (s *Service) Create(ctx context.Context, in CreateInput) (*Environment, error) {
	if err := validateCreate(in); err != nil {
		return nil, err
	}
	if err := s.checkWebhookURLs(ctx, in.WebhookURLs); err != nil {
		return nil, err
	}
	env, err := s.newEnvironment(ctx, in)
	if err != nil {
		return nil, err
	}
	if err := s.store.CreateEnvironment(ctx, env); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, store.Conflict("environment_exists", "An environment named %q already exists.", in.Name)
		}
		return nil, err
	}
	return env, nil
}

// validateCreate checks a CreateInput.
func validateCreate(in CreateInput) error {
	if !nameRe.MatchString(in.Name) {
		return store.Invalid("invalid_body", "The environment name must be 1 to 63 lowercase letters, digits, '-' or '_'.")
	}
	if err := ValidateWebhookURLs(in.WebhookURLs); err != nil {
		return err
	}
	if in.WebhookSigningKey != "" && len(in.WebhookSigningKey) < 16 {
		return store.Invalid("invalid_body", "The webhook signing key must be at least 16 characters.")
	}
	if in.ConnectUI != nil {
		return validateConnectUI(*in.ConnectUI)
	}
	return nil
}

// newEnvironment builds the environment of a validated CreateInput, its
// webhook signing key sealed.
func (s *Service) newEnvironment(ctx context.Context, in CreateInput) (*Environment, error) {
	key := in.WebhookSigningKey
	if key == "" {
		key = randomToken(32)
	}
	sealed, err := s.keyring.Seal(ctx, purposeSigningKey, []byte(key))
	if err != nil {
		return nil, err
	}
	now := s.nowUTC()
	env := &Environment{
		Account:                 in.Account,
		Name:                    in.Name,
		WebhookURLs:             append([]string{}, in.WebhookURLs...),
		SealedWebhookSigningKey: sealed,
		WebhookSettings:         DefaultWebhookSettings(),
		ConnectUI:               ConnectUISettings{Theme: "system"},
		CreatedAt:               now,
		UpdatedAt:               now,
	}
	if env.Account == "" {
		env.Account = "default"
	}
	if in.WebhookSettings != nil {
		env.WebhookSettings = *in.WebhookSettings
	}
	if in.ConnectUI != nil {
		env.ConnectUI = *in.ConnectUI
	}
	return env, nil
}

// Get returns an environment by id.
func (s *Service) Get(ctx context.Context, id int64) (*Environment, error) {
	env, err := s.store.GetEnvironment(ctx, id)
	return env, notFound(err, "environment")
}

// GetByName returns an environment by name.
func (s *Service) GetByName(ctx context.Context, name string) (*Environment, error) {
	env, err := s.store.GetEnvironmentByName(ctx, name)
	return env, notFound(err, "environment")
}

// List returns every environment.
func (s *Service) List(ctx context.Context) ([]*Environment, error) {
	return s.store.ListEnvironments(ctx)
}

// UpdateInput changes the settings of an environment; nil fields stay.
type UpdateInput struct {
	WebhookURLs       *[]string
	WebhookSigningKey *string
	WebhookSettings   *WebhookSettings
	ConnectUI         *ConnectUISettings
	CallbackURL       *string
}

// Update changes an environment's settings. Webhook URLs are checked
// first (see SetWebhookURLCheck): a refused one changes nothing. A new
// webhook signing key signs the webhooks this process sends from then on
// (other processes within the key cache TTL, see NewService).
func (s *Service) Update(ctx context.Context, id int64, in UpdateInput) (*Environment, error) {
	return s.update(ctx, id, in, nil)
}

// RotateWebhookSigningKey replaces the environment's webhook signing key
// with a new random one and returns it: like an API key, it is shown only
// this once. The webhooks this process sends from then on are signed with
// it (other processes' within the key cache TTL, see NewService).
func (s *Service) RotateWebhookSigningKey(ctx context.Context, id int64) (string, error) {
	key := randomToken(32)
	if _, err := s.Update(ctx, id, UpdateInput{WebhookSigningKey: &key}); err != nil {
		return "", err
	}
	return key, nil
}

// update is Update, with patch, when not nil, applied to the environment
// read in the transaction after the fields of in: a change of some members
// of a setting that keeps the others as they are at that moment.
func (s *Service) update(ctx context.Context, id int64, in UpdateInput, patch func(*Environment)) (*Environment, error) {
	if in.WebhookURLs != nil {
		if err := s.checkWebhookURLs(ctx, *in.WebhookURLs); err != nil {
			return nil, err
		}
	}
	var out *Environment
	err := s.store.WithTx(ctx, func(ctx context.Context) error {
		env, err := s.store.GetEnvironment(ctx, id)
		if err != nil {
			return notFound(err, "environment")
		}
		if in.WebhookURLs != nil {
			env.WebhookURLs = append([]string{}, (*in.WebhookURLs)...)
		}
		if in.WebhookSigningKey != nil {
			if len(*in.WebhookSigningKey) < 16 {
				return store.Invalid("invalid_body", "The webhook signing key must be at least 16 characters.")
			}
			sealed, err := s.keyring.Seal(ctx, purposeSigningKey, []byte(*in.WebhookSigningKey))
			if err != nil {
				return err
			}
			env.SealedWebhookSigningKey = sealed
		}
		if in.WebhookSettings != nil {
			env.WebhookSettings = *in.WebhookSettings
		}
		if in.ConnectUI != nil {
			if err := validateConnectUI(*in.ConnectUI); err != nil {
				return err
			}
			env.ConnectUI = *in.ConnectUI
		}
		if in.CallbackURL != nil {
			if *in.CallbackURL != "" {
				if err := validateURL(*in.CallbackURL, "callback_url"); err != nil {
					return err
				}
			}
			env.CallbackURL = *in.CallbackURL
		}
		if patch != nil {
			patch(env)
			if err := validateConnectUI(env.ConnectUI); err != nil {
				return err
			}
		}
		env.UpdatedAt = s.nowUTC()
		if err := s.store.UpdateEnvironment(ctx, env); err != nil {
			return err
		}
		out = env
		return nil
	})
	if err == nil && in.WebhookSigningKey != nil {
		s.afterChange(ctx, func() { s.signing.Delete(id) })
	}
	return out, err
}

// SigningKey returns the plaintext webhook signing key of an environment,
// remembered in process for the key cache TTL (a key changed by another
// instance takes effect here within it; one changed through this Service
// at once). Concurrent calls for an environment whose key is not cached
// read the Store once.
func (s *Service) SigningKey(ctx context.Context, environmentID int64) (string, error) {
	return s.signing.Get(ctx, environmentID)
}

func (s *Service) loadSigningKey(ctx context.Context, environmentID int64) (string, error) {
	env, err := s.store.GetEnvironment(ctx, environmentID)
	if err != nil {
		return "", err
	}
	return s.WebhookSigningKey(env)
}

// WebhookSigningKey returns the plaintext webhook signing key.
func (s *Service) WebhookSigningKey(env *Environment) (string, error) {
	b, err := s.keyring.Open(purposeSigningKey, env.SealedWebhookSigningKey)
	if err != nil {
		return "", fmt.Errorf("open webhook signing key of environment %d: %w", env.ID, err)
	}
	return string(b), nil
}

// ValidateWebhookURLs checks that there are at most two absolute http(s)
// URLs.
func ValidateWebhookURLs(urls []string) error {
	if len(urls) > MaxWebhookURLs {
		return store.Invalid("invalid_body", fmt.Sprintf("An environment has at most %d webhook URLs.", MaxWebhookURLs))
	}
	for i, u := range urls {
		if err := validateURL(u, fmt.Sprintf("webhook_urls.%d", i)); err != nil {
			return err
		}
	}
	return nil
}

func validateURL(raw, field string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(raw) > 2048 {
		return httpapi.InvalidField("must be an absolute http or https URL of at most 2048 characters", strings.Split(field, ".")...)
	}
	return nil
}

var colorRe = regexp.MustCompile(`^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)

func validateConnectUI(c ConnectUISettings) error {
	switch c.Theme {
	case "", "light", "dark", "system":
	default:
		return httpapi.InvalidField("must be light, dark or system", "theme")
	}
	for name, v := range map[string]string{"primary_color_light": c.PrimaryColorLight, "primary_color_dark": c.PrimaryColorDark} {
		if v != "" && !colorRe.MatchString(v) {
			return httpapi.InvalidField("must be a colour such as #00b2e3 or #0be", name)
		}
	}
	return nil
}

// NewAPIKey describes a new API key.
type NewAPIKey struct {
	Name string
	// Scopes are what the key may do. Only ScopeAll grants everything; a
	// key created without scopes (nil or empty) holds none, and every route
	// refuses it with 403.
	Scopes []string
	// Secret is the key itself; generated when empty. A given secret must be
	// at least 16 characters.
	Secret string
}

// CreateAPIKey creates an API key and returns it with its secret, which is
// shown only this once: the Store keeps a hash. A secret that is a key of
// any environment already is refused (ErrConflict, api_key_exists).
func (s *Service) CreateAPIKey(ctx context.Context, environmentID int64, in NewAPIKey) (string, *APIKey, error) {
	raw := in.Secret
	if raw == "" {
		raw = "sk_" + randomToken(32)
	}
	key, err := s.newAPIKey(environmentID, in.Name, raw, in.Scopes)
	if err != nil {
		return "", nil, err
	}
	if err := s.keyring.Ready(ctx); err != nil {
		return "", nil, err
	}
	if _, err := s.Get(ctx, environmentID); err != nil {
		return "", nil, err
	}
	if err := s.store.CreateAPIKey(ctx, key); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return "", nil, store.Conflict("api_key_exists", "This API key already exists.")
		}
		return "", nil, err
	}
	return raw, key, nil
}

// newAPIKey validates an API key and builds its record.
func (s *Service) newAPIKey(environmentID int64, name, raw string, scopes []string) (*APIKey, error) {
	// Authorization fails closed: no scopes means no access, never all.
	for _, sc := range scopes {
		if !ValidScope(sc) {
			return nil, store.Invalid("invalid_body", fmt.Sprintf("Unknown scope %q.", sc))
		}
	}
	if len(raw) < 16 || len(raw) > 512 || strings.ContainsAny(raw, " \t\r\n") {
		return nil, store.Invalid("invalid_body", "An API key must be 16 to 512 characters without whitespace.")
	}
	h := sha256.Sum256([]byte(raw))
	return &APIKey{
		EnvironmentID: environmentID,
		Name:          name,
		Hash:          h[:],
		Hint:          raw[len(raw)-4:],
		Scopes:        append([]string{}, scopes...),
		CreatedAt:     s.nowUTC(),
	}, nil
}

// ListAPIKeys lists an environment's keys (hashes and hints, never secrets).
func (s *Service) ListAPIKeys(ctx context.Context, environmentID int64) ([]*APIKey, error) {
	return s.store.ListAPIKeys(ctx, environmentID)
}

// DeleteAPIKey revokes a key. The process's key cache forgets it at once
// (a request that comes after DeleteAPIKey returns is refused, even while
// a refresh of the key is in flight); other processes within the key cache
// TTL.
func (s *Service) DeleteAPIKey(ctx context.Context, environmentID, id int64) error {
	if err := s.store.DeleteAPIKey(ctx, environmentID, id); err != nil {
		return notFound(err, "api key")
	}
	s.afterChange(ctx, func() {
		s.keys.DeleteFunc(func(_ [32]byte, p *httpapi.Principal) bool {
			return p.KeyID == id && p.EnvironmentID == environmentID
		})
	})
	return nil
}

// Authenticate resolves an API key to its principal. An unknown key is an
// ErrUnauthorized error with code unknown_account. Principals are cached
// for the key cache TTL (see NewService); unknown keys are not.
func (s *Service) Authenticate(ctx context.Context, raw string) (*httpapi.Principal, error) {
	return s.keys.Get(ctx, sha256.Sum256([]byte(raw)))
}

// loadPrincipal reads the principal of the API key whose SHA-256 is h.
func (s *Service) loadPrincipal(ctx context.Context, h [32]byte) (*httpapi.Principal, error) {
	key, err := s.store.GetAPIKeyByHash(ctx, h[:])
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, store.Errorf(store.ErrUnauthorized, "unknown_account", "Authentication failed: the API key is unknown.")
		}
		return nil, err
	}
	env, err := s.store.GetEnvironment(ctx, key.EnvironmentID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, store.Errorf(store.ErrUnauthorized, "unknown_account", "Authentication failed: the API key is unknown.")
		}
		return nil, err
	}
	return &httpapi.Principal{EnvironmentID: env.ID, Environment: env.Name, Account: env.Account, KeyID: key.ID, Scopes: key.Scopes}, nil
}

var varNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,254}$`)

// Limits of environment variables.
const (
	// MaxVariables is the number of variables an environment may have.
	MaxVariables = 1000
	// MaxVariableValue is the longest value of a variable, in bytes.
	MaxVariableValue = 64 << 10
)

// ValidVariableName reports whether name is a valid variable name: 1 to
// 255 letters, digits and '_', not starting with a digit.
func ValidVariableName(name string) bool { return varNameRe.MatchString(name) }

// SetVariables replaces the environment's variables. Names are 1 to 255
// letters, digits and '_' not starting with a digit; values are at most
// MaxVariableValue bytes, sealed at rest; there are at most MaxVariables.
func (s *Service) SetVariables(ctx context.Context, environmentID int64, vars map[string]string) error {
	if _, err := s.Get(ctx, environmentID); err != nil {
		return err
	}
	if len(vars) > MaxVariables {
		return store.Invalid("invalid_body", fmt.Sprintf("An environment has at most %d variables.", MaxVariables))
	}
	out := make([]Variable, 0, len(vars))
	for name, value := range vars {
		if !varNameRe.MatchString(name) {
			return store.Invalid("invalid_body", fmt.Sprintf("Invalid variable name %q.", name))
		}
		if len(value) > MaxVariableValue {
			return store.Invalid("invalid_body", fmt.Sprintf("The value of %s is longer than 64 KiB.", name))
		}
		sealed, err := s.keyring.Seal(ctx, purposeVariable, []byte(value))
		if err != nil {
			return err
		}
		out = append(out, Variable{Name: name, SealedValue: sealed})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return s.store.SetVariables(ctx, environmentID, out)
}

// Variables returns the environment's variables in plaintext, by name.
func (s *Service) Variables(ctx context.Context, environmentID int64) ([]PlainVariable, error) {
	vars, err := s.store.ListVariables(ctx, environmentID)
	if err != nil {
		return nil, err
	}
	out := make([]PlainVariable, 0, len(vars))
	for _, v := range vars {
		b, err := s.keyring.Open(purposeVariable, v.SealedValue)
		if err != nil {
			return nil, fmt.Errorf("open variable %s: %w", v.Name, err)
		}
		out = append(out, PlainVariable{Name: v.Name, Value: string(b)})
	}
	return out, nil
}

// PlainVariable is an environment variable with its value, the wire shape of
// GET /environment-variables.
type PlainVariable struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Reseal re-seals every secret of every environment that is not sealed under
// the keyring's primary key. It returns the number of values re-sealed.
func (s *Service) Reseal(ctx context.Context) (int, error) {
	envs, err := s.store.ListEnvironments(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range envs {
		err := s.store.WithTx(ctx, func(ctx context.Context) error {
			env, err := s.store.GetEnvironment(ctx, e.ID)
			if err != nil {
				return err
			}
			if s.keyring.NeedsReseal(env.SealedWebhookSigningKey) {
				if env.SealedWebhookSigningKey, err = s.keyring.Reseal(purposeSigningKey, env.SealedWebhookSigningKey); err != nil {
					return err
				}
				if err := s.store.UpdateEnvironment(ctx, env); err != nil {
					return err
				}
				n++
			}
			vars, err := s.store.ListVariables(ctx, e.ID)
			if err != nil {
				return err
			}
			changed := false
			for i := range vars {
				if s.keyring.NeedsReseal(vars[i].SealedValue) {
					if vars[i].SealedValue, err = s.keyring.Reseal(purposeVariable, vars[i].SealedValue); err != nil {
						return err
					}
					changed = true
					n++
				}
			}
			if changed {
				return s.store.SetVariables(ctx, e.ID, vars)
			}
			return nil
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func notFound(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		var e *store.Error
		if errors.As(err, &e) {
			return err
		}
		return store.NotFound("not_found", "The %s was not found.", what)
	}
	return err
}

func randomToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
