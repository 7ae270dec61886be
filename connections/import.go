package connections

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// ImportInput imports credentials that already exist, in the body shape of
// POST /connections and the deprecated POST /connection. Either the flat
// credential fields or a nested Credentials object may be given.
type ImportInput struct {
	ProviderConfigKey string `json:"provider_config_key"`
	ConnectionID      string `json:"connection_id"`

	// OAuth 2.
	AccessToken               string         `json:"access_token"`
	RefreshToken              string         `json:"refresh_token"`
	ExpiresAt                 *DateTime      `json:"expires_at"`
	ExpiresIn                 *int64         `json:"expires_in"`
	NoExpiration              bool           `json:"no_expiration"`
	OAuthClientIDOverride     string         `json:"oauth_client_id_override"`
	OAuthClientSecretOverride string         `json:"oauth_client_secret_override"`
	Raw                       map[string]any `json:"raw"`

	// OAuth 1.
	OAuthToken       string `json:"oauth_token"`
	OAuthTokenSecret string `json:"oauth_token_secret"`

	// Basic.
	Username *string `json:"username"`
	Password *string `json:"password"`

	// API key.
	APIKey string `json:"api_key"`

	// Credentials is the nested form: {type, access_token, apiKey, ...}.
	Credentials *Credentials `json:"credentials"`

	Metadata         map[string]any    `json:"metadata"`
	ConnectionConfig map[string]any    `json:"connection_config"`
	Tags             map[string]string `json:"tags"`
	// EndUser and Organization are deprecated; they become tags.
	EndUser      *EndUser      `json:"end_user"`
	Organization *Organization `json:"organization"`
}

// DateTime is a timestamp in a request body: an RFC 3339 date-time or a
// date (YYYY-MM-DD, meaning midnight UTC).
type DateTime struct{ time.Time }

// UnmarshalJSON parses a JSON string.
func (d *DateTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &httpapi.FieldErr{Path: []string{"expires_at"}, Message: "must be a date-time string"}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			d.Time = t.UTC()
			return nil
		}
	}
	return &httpapi.FieldErr{Path: []string{"expires_at"}, Message: "must be an ISO 8601 date-time such as 2030-01-02T15:04:05Z"}
}

// MaxImportBatch is the largest number of connections one ImportBatch (one
// bulk POST /connections) imports.
const MaxImportBatch = 1000

// DefaultMaxImportBody is the default limit of the body of a bulk import
// (POST /connections with an array): 32 MiB.
const DefaultMaxImportBody = 32 << 20

// DecodeImportBatch decodes the body of a bulk import: a JSON array of 1
// to MaxImportBatch objects, each the body of a single import. It refuses
// what httpapi.Unmarshal refuses (see httpapi.CheckJSON); an element that
// is not an object, or whose fields have the wrong types, is an
// invalid_body error whose errors[].path starts with its index. Large
// batches are decoded on several goroutines.
func DecodeImportBatch(b []byte) ([]ImportInput, error) {
	elems, err := httpapi.CheckJSONArray(b)
	if err != nil {
		return nil, err
	}
	if len(elems) > MaxImportBatch {
		return nil, batchSizeError(strconv.Itoa(len(elems)))
	}
	out := make([]ImportInput, len(elems))
	problems := make([][]store.FieldError, len(elems))
	syntax := make([]bool, len(elems))
	decode := func(i int) {
		e := elems[i]
		if len(e) == 0 {
			syntax[i] = true
			return
		}
		if e[0] != '{' {
			problems[i] = []store.FieldError{{Code: "invalid_type", Message: "must be an object", Path: []string{strconv.Itoa(i)}}}
			return
		}
		if err := json.Unmarshal(e, &out[i]); err != nil {
			// A value of the wrong type is the element's problem; any
			// other error (a malformed literal) makes the body invalid.
			var te *json.UnmarshalTypeError
			var fe *httpapi.FieldErr
			if !errors.As(err, &te) && !errors.As(err, &fe) {
				syntax[i] = true
				return
			}
			problems[i], _ = itemProblems(i, httpapi.DecodeError(err))
		}
	}
	workers := min(runtime.GOMAXPROCS(0), 4, len(elems)/importDecodeShare)
	if workers <= 1 {
		for i := range elems {
			decode(i)
		}
	} else {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := w * len(elems) / workers; i < (w+1)*len(elems)/workers; i++ {
					decode(i)
				}
			})
		}
		wg.Wait()
	}
	var fe []store.FieldError
	for i := range elems {
		if syntax[i] {
			return nil, store.Invalid("invalid_body", "The request body is not valid JSON.")
		}
		fe = append(fe, problems[i]...)
	}
	if len(fe) > 0 {
		return nil, store.Invalid("invalid_body", "The request body is invalid; none was imported.", fe...)
	}
	return out, nil
}

// importDecodeShare is the fewest elements per goroutine of
// DecodeImportBatch.
const importDecodeShare = 64

func batchSizeError(n string) error {
	return store.Invalid("invalid_body", fmt.Sprintf("A bulk import holds 1 to %d connections; this one holds %s.", MaxImportBatch, n),
		store.FieldError{Code: "invalid_size", Message: fmt.Sprintf("must hold 1 to %d connections", MaxImportBatch), Path: []string{}})
}

// importFirstWrite is how many prepared items the first statement of an
// ImportBatch waits for; the next ones take whatever is ready.
const importFirstWrite = 100

// ImportResult is one connection imported by ImportBatch.
type ImportResult struct {
	// Connection is the connection as stored, without its credentials.
	Connection *Connection
	// Created is true when the import created the connection, false when
	// it updated an existing one.
	Created bool
}

// Import creates a connection from existing credentials, or updates the
// existing connection with the same id. It reports whether it created one.
//
// An update replaces the credentials, clears the connection's errors and
// starts its refresh bookkeeping over (as a reconnection does); its
// connection config, metadata and tags change only when given. Import
// writes an operations log entry (import_create or import_update) and
// sends no webhook.
func (s *Service) Import(ctx context.Context, environmentID int64, in ImportInput) (*Connection, bool, error) {
	p, err := s.prepareImport(ctx, environmentID, &in, func(key string) (l integrationLookup) {
		l.it, l.err = s.integrations.GetIntegration(ctx, environmentID, key)
		if errors.Is(l.err, store.ErrNotFound) {
			l.err = store.NotFound("unknown_provider_config", "The integration %q was not found.", key)
		}
		return l
	})
	if err != nil {
		return nil, false, err
	}
	validates, err := s.validates(ctx, environmentID, p.Connection.IntegrationKey)
	if err != nil {
		return nil, false, err
	}
	if err := s.store.WithTx(ctx, func(ctx context.Context) error {
		if err := s.store.ImportConnections(ctx, []*ImportItem{p}); err != nil {
			return err
		}
		if validates {
			return nil // announced once valid
		}
		return s.savedImports(ctx, []*ImportItem{p})
	}); err != nil {
		return nil, false, err
	}
	if validates {
		if err := s.validate(ctx, p.Connection, p.Created); err != nil {
			return nil, false, err
		}
		if err := s.store.WithTx(ctx, func(ctx context.Context) error { return s.savedImports(ctx, []*ImportItem{p}) }); err != nil {
			return nil, false, err
		}
	}
	c := p.Connection
	c.Credentials = nil
	return c, p.Created, nil
}

// ImportBatch imports 1 to MaxImportBatch connections as Import imports
// each, all or none, in one transaction: a few statements for the whole
// batch. Every item is validated; when any is invalid, nothing is written
// and the error (invalid_body, ErrInvalid) lists the problems of every
// invalid item, each errors[].path starting with the item's index. The
// same connection (provider_config_key and connection_id) given twice is
// such a problem. Results are in the order of ins.
//
// The items are validated and sealed on a goroutine of their own while
// the Store writes those already sealed, so that this work and the
// database's overlap; the Store gets them in the order of their identity,
// so that concurrent imports touching the same connections lock them in
// one order.
func (s *Service) ImportBatch(ctx context.Context, environmentID int64, ins []ImportInput) ([]ImportResult, error) {
	if len(ins) == 0 || len(ins) > MaxImportBatch {
		return nil, batchSizeError(strconv.Itoa(len(ins)))
	}
	// The keys checked and the integrations looked up before the
	// transaction: the preparing goroutine does not use the Store, which a
	// transaction may hold.
	if err := s.keyring.Ready(ctx); err != nil {
		return nil, err
	}
	lookups := map[string]integrationLookup{}
	for i := range ins {
		k := ins[i].ProviderConfigKey
		if _, done := lookups[k]; done || k == "" {
			continue
		}
		var l integrationLookup
		l.it, l.err = s.integrations.GetIntegration(ctx, environmentID, k)
		if errors.Is(l.err, store.ErrNotFound) {
			l.err = store.NotFound("unknown_provider_config", "The integration %q was not found.", k)
		} else if l.err != nil {
			return nil, l.err
		}
		lookups[k] = l
	}
	order := make([]int, len(ins))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(strings.Compare(ins[a].ProviderConfigKey, ins[b].ProviderConfigKey),
			strings.Compare(ins[a].ConnectionID, ins[b].ConnectionID))
	})

	// The preparing goroutine fills items and problems, and sends the
	// index of each item ready to be written (none once an item is
	// invalid: the batch will be refused, and it goes on only to find
	// every problem). Whoever receives an index may read its item; once
	// ready is closed, all of them.
	items := make([]*ImportItem, len(ins))
	problems := make([][]store.FieldError, len(ins))
	ready := make(chan int, len(ins))
	stop := make(chan struct{})
	var failed error // a failure that is not an item's problem; read once ready is closed
	go func() {
		defer close(ready)
		defer func() {
			if r := recover(); r != nil {
				failed = fmt.Errorf("connections: preparing an import panicked: %v", r)
			}
		}()
		lookup := func(key string) integrationLookup { return lookups[key] }
		type identity struct{ key, id string }
		first := make(map[identity]int, len(ins))
		refused := false
		for _, i := range order {
			select {
			case <-stop:
				return
			default:
			}
			p, err := s.prepareImport(ctx, environmentID, &ins[i], lookup)
			if err != nil {
				fe, ok := itemProblems(i, err)
				if !ok {
					failed = err
					return
				}
				problems[i], refused = fe, true
				continue
			}
			k := identity{p.Connection.IntegrationKey, p.Connection.ConnectionID}
			if j, dup := first[k]; dup {
				problems[i] = []store.FieldError{{Code: "duplicate", Path: []string{strconv.Itoa(i), "connection_id"},
					Message: fmt.Sprintf("names the same connection as item %d (same provider_config_key and connection_id)", j)}}
				refused = true
				continue
			}
			first[k] = i
			items[i] = p
			if !refused {
				ready <- i
			}
		}
	}()
	err := s.store.WithTx(ctx, func(ctx context.Context) error {
		// Write what is ready, in statements of what has become ready
		// meanwhile. The first waits for importFirstWrite items (or all),
		// so that the database starts early but not on a handful.
		var batch []*ImportItem
		for open, want := true, importFirstWrite; open; want = 1 {
			batch = batch[:0]
			for open && len(batch) < want {
				i, ok := <-ready
				if !ok {
					open = false
					break
				}
				batch = append(batch, items[i])
			}
		drain:
			for open {
				select {
				case i, ok := <-ready:
					if !ok {
						open = false
						break drain
					}
					batch = append(batch, items[i])
				default:
					break drain
				}
			}
			if len(batch) == 0 {
				break
			}
			if err := s.store.ImportConnections(ctx, batch); err != nil {
				return err
			}
		}
		if failed != nil {
			return failed
		}
		var fe []store.FieldError
		invalid := 0
		for _, p := range problems {
			if len(p) > 0 {
				fe = append(fe, p...)
				invalid++
			}
		}
		if invalid > 0 {
			verb := "are"
			if invalid == 1 {
				verb = "is"
			}
			return store.Invalid("invalid_body", fmt.Sprintf("%d of the %d connections %s invalid; none was imported.", invalid, len(ins), verb), fe...)
		}
		return s.savedImports(ctx, items)
	})
	close(stop)
	for range ready { // let the goroutine end when the transaction ended early
	}
	if err != nil {
		return nil, err
	}
	out := make([]ImportResult, len(items))
	for i, p := range items {
		p.Connection.Credentials = nil
		out[i] = ImportResult{Connection: p.Connection, Created: p.Created}
	}
	return out, nil
}

// itemProblems turns the refusal of one item of a batch into field errors
// whose paths start with its index. ok is false for an error that is not
// a refusal of the item (a Store failure), which fails the whole batch.
func itemProblems(i int, err error) (fe []store.FieldError, ok bool) {
	var e *store.Error
	if !errors.As(err, &e) || !(errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrNotFound)) {
		return nil, false
	}
	idx := strconv.Itoa(i)
	if len(e.Errors) == 0 {
		path := []string{idx}
		if e.Code == "unknown_provider_config" {
			path = append(path, "provider_config_key")
		}
		return []store.FieldError{{Code: e.Code, Message: e.Message, Path: path}}, true
	}
	for _, f := range e.Errors {
		f.Path = append([]string{idx}, f.Path...)
		fe = append(fe, f)
	}
	return fe, true
}

// integrationLookup is the result of a GetIntegration.
type integrationLookup struct {
	it  *integrations.Integration
	err error
}

// prepareImport validates one import and builds its ImportItem, sealed.
// lookup returns the integration of a provider_config_key.
func (s *Service) prepareImport(ctx context.Context, environmentID int64, in *ImportInput, lookup func(key string) integrationLookup) (*ImportItem, error) {
	if in.ProviderConfigKey == "" {
		return nil, httpapi.InvalidField("is required", "provider_config_key")
	}
	if in.ConnectionID == "" {
		in.ConnectionID = newConnectionID()
	}
	if !ValidConnectionID(in.ConnectionID) {
		return nil, httpapi.InvalidField(fmt.Sprintf("must be 1 to %d characters without control characters", MaxConnectionIDLen), "connection_id")
	}
	l := lookup(in.ProviderConfigKey)
	if l.err != nil {
		return nil, l.err
	}
	it := l.it
	if err := integrations.UnusableProviderError(s.catalog, it.Provider); err != nil {
		return nil, err
	}
	if err := checkConfigText(in.ConnectionConfig, "connection_config"); err != nil {
		return nil, err
	}
	mode := ""
	var prov *integrations.Provider
	if p, ok := s.catalog.Get(it.Provider); ok {
		mode, prov = p.AuthMode, p
		// A value that would change more than its part of the provider's
		// URLs is refused now rather than when the URLs are built (which
		// refuses it too). Without values there is nothing to check.
		if len(in.ConnectionConfig) > 0 {
			if err := checkConfigURLs(p, stringMap(in.ConnectionConfig), "connection_config"); err != nil {
				return nil, err
			}
		}
	}
	creds, err := importCredentials(mode, in, s.now())
	if err != nil {
		return nil, err
	}
	if err := checkImportedCredentials(creds, in.Credentials != nil); err != nil {
		return nil, err
	}
	if err := importedAWS(creds, in, it); err != nil {
		return nil, err
	}
	if err := checkImportedClientKeys(prov, creds); err != nil {
		return nil, err
	}
	tags, err := NormalizeTags(in.Tags)
	if err != nil {
		return nil, err
	}
	if in.EndUser != nil || in.Organization != nil {
		eu, err := EndUserTags(in.EndUser, in.Organization)
		if err != nil {
			return nil, err
		}
		if tags == nil {
			tags = map[string]string{}
		}
		for k, v := range eu {
			tags[k] = v
		}
		if len(tags) > MaxTags {
			return nil, httpapi.InvalidField(fmt.Sprintf("must have at most %d keys", MaxTags), "tags")
		}
	}
	now := s.nowUTC()
	c := &Connection{
		EnvironmentID:    environmentID,
		IntegrationKey:   it.UniqueKey,
		ConnectionID:     in.ConnectionID,
		Provider:         it.Provider,
		ConnectionConfig: in.ConnectionConfig,
		Metadata:         in.Metadata,
		Tags:             tags,
		Credentials:      creds,
		Errors:           []Error{},
		CreatedAt:        now,
		UpdatedAt:        now,
	}
	if c.ConnectionConfig == nil {
		c.ConnectionConfig = map[string]any{}
	}
	if err := s.seal(ctx, c); err != nil {
		return nil, err
	}
	// The operations log entry, stored with the connection (its Operation
	// is set by outcome).
	e := &oplog.Entry{EnvironmentID: environmentID, Type: "connection", Operation: OpImportCreate,
		IntegrationKey: c.IntegrationKey, ConnectionID: c.ConnectionID,
		Message: "connection imported", Meta: map[string]any{"auth_mode": c.AuthMode}}
	s.log.Stamp(e)
	return &ImportItem{Connection: c, ReplaceConnectionConfig: in.ConnectionConfig != nil,
		ReplaceMetadata: in.Metadata != nil, ReplaceTags: tags != nil, Log: e}, nil
}

// importCredentials builds credentials of the provider's auth mode from an
// import body, applying the 400 rules.
func importCredentials(mode string, in *ImportInput, now time.Time) (*Credentials, error) {
	if in.Credentials != nil {
		c := *in.Credentials
		// When the token was obtained is not the caller's to say: unknown
		// (see Credentials.ObtainedAt).
		c.ObtainedAt = nil
		if c.Type == "" {
			c.Type = mode
		}
		if mode != "" && c.Type != mode && !(mode == integrations.AuthModeOAuth2CC && c.Type == integrations.AuthModeOAuth2) && !importTypeFits(mode, c.Type) {
			return nil, httpapi.InvalidField(fmt.Sprintf("type %s does not match the provider's auth mode %s", c.Type, mode), "credentials", "type")
		}
		if err := nestedRegistered(mode, &c, in.ConnectionConfig); err != nil {
			return nil, err
		}
		return checkCredentials(&c)
	}
	switch mode {
	case integrations.AuthModeOAuth2, integrations.AuthModeApp, "CUSTOM", "MCP_OAUTH2", integrations.AuthModeMCPOAuth2Generic:
		if in.AccessToken == "" {
			return nil, httpapi.InvalidField("is required for OAuth 2 connections", "access_token")
		}
		c := &Credentials{Type: integrations.AuthModeOAuth2, AccessToken: in.AccessToken, RefreshToken: in.RefreshToken}
		if mode == integrations.AuthModeApp {
			c.Type = integrations.AuthModeApp
		}
		switch {
		case in.ExpiresAt != nil:
			t := in.ExpiresAt.Time.Truncate(time.Millisecond)
			c.ExpiresAt = &t
		case in.ExpiresIn != nil:
			if *in.ExpiresIn < 0 || *in.ExpiresIn > 100*365*24*3600 {
				return nil, httpapi.InvalidField("must be a positive number of seconds", "expires_in")
			}
			t := now.UTC().Add(time.Duration(*in.ExpiresIn) * time.Second).Truncate(time.Millisecond)
			c.ExpiresAt = &t
			// expires_in counts from now: the token's lifetime is known.
			obtained := now.UTC().Truncate(time.Millisecond)
			c.ObtainedAt = &obtained
		case !in.NoExpiration:
			return nil, httpapi.InvalidField("expires_at or expires_in is required unless no_expiration is true", "expires_at")
		}
		raw := map[string]any{"access_token": in.AccessToken}
		if in.RefreshToken != "" {
			raw["refresh_token"] = in.RefreshToken
		}
		if c.ExpiresAt != nil {
			raw["expires_at"] = c.ExpiresAt.Format(time.RFC3339Nano)
		}
		for k, v := range in.Raw {
			raw[k] = v
		}
		c.Raw = raw
		if in.OAuthClientIDOverride != "" || in.OAuthClientSecretOverride != "" {
			c.ConfigOverride = &ConfigOverride{ClientID: in.OAuthClientIDOverride, ClientSecret: in.OAuthClientSecretOverride}
		}
		if mode == integrations.AuthModeMCPOAuth2Generic {
			if err := importRegistered(c, in.ConnectionConfig); err != nil {
				return nil, err
			}
		}
		return checkCredentials(c)
	case integrations.AuthModeOAuth2CC:
		c := &Credentials{Type: integrations.AuthModeOAuth2CC, Token: in.AccessToken, ClientID: in.OAuthClientIDOverride, ClientSecret: in.OAuthClientSecretOverride}
		if in.ExpiresAt != nil {
			t := in.ExpiresAt.Time.Truncate(time.Millisecond)
			c.ExpiresAt = &t
		} else if in.ExpiresIn != nil && *in.ExpiresIn >= 0 {
			t := now.UTC().Add(time.Duration(*in.ExpiresIn) * time.Second).Truncate(time.Millisecond)
			c.ExpiresAt = &t
			obtained := now.UTC().Truncate(time.Millisecond)
			c.ObtainedAt = &obtained
		}
		c.Raw = in.Raw
		return checkCredentials(c)
	case integrations.AuthModeOAuth1:
		return checkCredentials(&Credentials{Type: integrations.AuthModeOAuth1, OAuthToken: in.OAuthToken, OAuthTokenSecret: in.OAuthTokenSecret, Raw: in.Raw})
	case integrations.AuthModeBasic, integrations.AuthModeInstallPlugin:
		c := &Credentials{Type: integrations.AuthModeBasic}
		if in.Username == nil {
			return nil, httpapi.InvalidField("is required for Basic connections", "username")
		}
		if in.Password == nil {
			return nil, httpapi.InvalidField("is required for Basic connections", "password")
		}
		c.Username, c.Password = *in.Username, *in.Password
		return checkCredentials(c)
	case integrations.AuthModeAPIKey:
		return checkCredentials(&Credentials{Type: integrations.AuthModeAPIKey, APIKey: in.APIKey})
	case integrations.AuthModeNone, "":
		return &Credentials{Type: integrations.AuthModeNone}, nil
	case integrations.AuthModeTBA:
		return nil, httpapi.InvalidField("TBA connections are imported with a nested credentials object {type, token_id, token_secret}", "credentials")
	case integrations.AuthModeAWSSigV4:
		return nil, flatAWSImport()
	default:
		return nil, store.Invalid("invalid_auth_mode", fmt.Sprintf("Connections of auth mode %s cannot be imported.", mode))
	}
}

// checkCredentials applies the required-field rules of each type.
func checkCredentials(c *Credentials) (*Credentials, error) {
	req := func(v, field string) error {
		if strings.TrimSpace(v) == "" {
			return store.Invalid("invalid_credentials", fmt.Sprintf("%s is required for %s connections.", field, c.Type),
				store.FieldError{Code: "required", Message: "is required", Path: []string{field}})
		}
		if len(v) > 64<<10 {
			return store.Invalid("invalid_credentials", fmt.Sprintf("%s is too long.", field),
				store.FieldError{Code: "too_long", Message: "is at most 64 KiB", Path: []string{field}})
		}
		return nil
	}
	var err error
	switch c.Type {
	case integrations.AuthModeOAuth2, integrations.AuthModeApp:
		err = req(c.AccessToken, "access_token")
	case integrations.AuthModeOAuth1:
		if err = req(c.OAuthToken, "oauth_token"); err == nil {
			err = req(c.OAuthTokenSecret, "oauth_token_secret")
		}
	case integrations.AuthModeOAuth2CC:
		// A private JWK (private_key_jwt) replaces the secret; the provider's
		// rules are checked by checkImportedClientKeys.
		if err = req(c.ClientID, "client_id"); err == nil && (c.ClientPrivateKey == "" || c.ClientCertificate != "") {
			err = req(c.ClientSecret, "client_secret")
		}
	case integrations.AuthModeAPIKey:
		err = req(c.APIKey, "api_key")
	case integrations.AuthModeBasic:
		err = req(c.Username, "username")
	case integrations.AuthModeTBA:
		if err = req(c.TokenID, "token_id"); err == nil {
			err = req(c.TokenSecret, "token_secret")
		}
	case integrations.AuthModeCustom:
		err = checkCustomImport(c, req)
	case integrations.AuthModeAWSSigV4:
		err = checkAWSImport(c)
	case integrations.AuthModeNone:
	case integrations.AuthModeTwoStep, integrations.AuthModeJWT, integrations.AuthModeSignature, integrations.AuthModeBill:
		err = checkTokenModeImport(c)
	default:
		err = store.Invalid("invalid_credentials", fmt.Sprintf("Unknown credentials type %q.", c.Type))
	}
	if err != nil {
		return nil, err
	}
	if c.ExpiresAt != nil {
		t := c.ExpiresAt.UTC()
		c.ExpiresAt = &t
	}
	return c, nil
}

func parseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", errors.New("bad url")
	}
	return u.String(), nil
}

// StringList is a JSON string or array of strings.
type StringList []string

// UnmarshalJSON accepts "a" and ["a","b"].
func (l *StringList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = StringList{s}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return &httpapi.FieldErr{Path: []string{"connection_id"}, Message: "must be a string or an array of strings"}
	}
	*l = list
	return nil
}
