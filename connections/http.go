package connections

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/internal/keyset"
	"github.com/embedauth/connect/store"
)

// APIConnection is the list form of a connection: no credentials.
type APIConnection struct {
	ID                int64             `json:"id"`
	ConnectionID      string            `json:"connection_id"`
	Provider          string            `json:"provider"`
	ProviderConfigKey string            `json:"provider_config_key"`
	Created           string            `json:"created"`
	Metadata          map[string]any    `json:"metadata"`
	Tags              map[string]string `json:"tags"`
	EndUser           *APIEndUser       `json:"end_user"`
	Errors            []Error           `json:"errors"`
}

// APIConnectionFull is the single form of a connection, with credentials.
type APIConnectionFull struct {
	ID                 int64             `json:"id"`
	ConnectionID       string            `json:"connection_id"`
	ProviderConfigKey  string            `json:"provider_config_key"`
	Provider           string            `json:"provider"`
	ConnectionConfig   map[string]any    `json:"connection_config"`
	WebhookURLOverride *string           `json:"webhook_url_override"`
	CreatedAt          string            `json:"created_at"`
	UpdatedAt          string            `json:"updated_at"`
	LastFetchedAt      *string           `json:"last_fetched_at"`
	Metadata           map[string]any    `json:"metadata"`
	Errors             []Error           `json:"errors"`
	EndUser            *APIEndUser       `json:"end_user"`
	Tags               map[string]string `json:"tags"`
	// Auth is the state of the credentials, without any secret: in every
	// answer, whatever the key's scopes.
	Auth        APIAuthState        `json:"auth"`
	Credentials *APICredentialsBody `json:"credentials,omitempty"`
}

// APIAuthState is the state of a connection's credentials, without any
// secret: what an operator needs to tell why a connection broke.
type APIAuthState struct {
	// Mode is the auth mode (OAUTH2, API_KEY, ...).
	Mode string `json:"mode"`
	// ExpiresAt is when the credentials expire; null when they do not,
	// or when it is not known.
	ExpiresAt *string `json:"expires_at"`
	// LastRefreshFailure is when a refresh last failed; null after a
	// success. RefreshAttempts counts the failures since.
	LastRefreshFailure *string `json:"last_refresh_failure"`
	RefreshAttempts    int     `json:"refresh_attempts"`
}

// APIEndUser is the end user derived from a connection's conventional tags.
type APIEndUser struct {
	ID           string            `json:"id"`
	DisplayName  *string           `json:"display_name"`
	Email        *string           `json:"email"`
	Tags         map[string]string `json:"tags"`
	Organization *APIOrganization  `json:"organization"`
}

// APIOrganization is the organization of an APIEndUser.
type APIOrganization struct {
	ID          string  `json:"id"`
	DisplayName *string `json:"display_name"`
}

func opt(m map[string]string, k string) *string {
	if v, ok := m[k]; ok && v != "" {
		return &v
	}
	return nil
}

func apiEndUser(tags map[string]string) *APIEndUser {
	id := tags[TagEndUserID]
	if id == "" {
		return nil
	}
	u := &APIEndUser{ID: id, DisplayName: opt(tags, TagEndUserDisplayName), Email: opt(tags, TagEndUserEmail), Tags: map[string]string{}}
	if org := tags[TagOrganizationID]; org != "" {
		u.Organization = &APIOrganization{ID: org, DisplayName: opt(tags, TagOrganizationDisplayName)}
	}
	return u
}

func nonNilTags(t map[string]string) map[string]string {
	if t == nil {
		return map[string]string{}
	}
	return t
}

func nonNilErrors(e []Error) []Error {
	if e == nil {
		return []Error{}
	}
	return e
}

// API returns the list form of c.
func API(c *Connection) APIConnection {
	return APIConnection{
		ID: c.ID, ConnectionID: c.ConnectionID, Provider: c.Provider, ProviderConfigKey: c.IntegrationKey,
		Created: httpapi.Time(c.CreatedAt), Metadata: c.Metadata, Tags: nonNilTags(c.Tags),
		EndUser: apiEndUser(c.Tags), Errors: nonNilErrors(c.Errors),
	}
}

// APIFull returns the single form of c. Credentials are included when
// withCredentials is true, and the refresh token (also inside raw) only when
// withRefreshToken is true too.
func APIFull(c *Connection, withCredentials, withRefreshToken bool) APIConnectionFull {
	out := APIConnectionFull{
		ID: c.ID, ConnectionID: c.ConnectionID, ProviderConfigKey: c.IntegrationKey, Provider: c.Provider,
		ConnectionConfig: c.ConnectionConfig, CreatedAt: httpapi.Time(c.CreatedAt), UpdatedAt: httpapi.Time(c.UpdatedAt),
		LastFetchedAt: httpapi.TimePtr(c.LastFetchedAt), Metadata: c.Metadata, Errors: nonNilErrors(c.Errors),
		EndUser: apiEndUser(c.Tags), Tags: nonNilTags(c.Tags),
		Auth: APIAuthState{Mode: c.AuthMode, ExpiresAt: httpapi.TimePtr(c.CredentialsExpiresAt),
			LastRefreshFailure: httpapi.TimePtr(c.LastRefreshFailure), RefreshAttempts: c.RefreshAttempts},
	}
	if out.ConnectionConfig == nil {
		out.ConnectionConfig = map[string]any{}
	}
	if c.WebhookURLOverride != "" {
		out.WebhookURLOverride = &c.WebhookURLOverride
	}
	if withCredentials && c.Credentials != nil {
		out.Credentials = APICredentials(c.Credentials, withRefreshToken)
	}
	return out
}

// APICredentialsBody is the wire form of credentials. Only the fields of
// the credentials' type are present; NONE credentials are {}.
type APICredentialsBody struct {
	Type             string          `json:"type,omitempty"`
	AccessToken      *string         `json:"access_token,omitempty"`
	RefreshToken     string          `json:"refresh_token,omitempty"`
	OAuthToken       *string         `json:"oauth_token,omitempty"`
	OAuthTokenSecret *string         `json:"oauth_token_secret,omitempty"`
	Token            *string         `json:"token,omitempty"`
	ClientID         *string         `json:"client_id,omitempty"`
	ClientSecret     *string         `json:"client_secret,omitempty"`
	APIKey           *string         `json:"apiKey,omitempty"`
	Username         *string         `json:"username,omitempty"`
	Password         *string         `json:"password,omitempty"`
	TokenID          *string         `json:"token_id,omitempty"`
	TokenSecret      *string         `json:"token_secret,omitempty"`
	ExpiresAt        string          `json:"expires_at,omitempty"`
	JWTToken         string          `json:"jwtToken,omitempty"`
	Raw              *map[string]any `json:"raw,omitempty"`
	ConfigOverride   *ConfigOverride `json:"config_override,omitempty"`
	// Fields are further fields of the credentials' type, written beside
	// the others (the provider's own fields of TWO_STEP and JWT).
	Fields map[string]any `json:"-"`
	*APIAWSSigV4
	// App and User are CUSTOM credentials' two tokens; User is null
	// without a user authorization.
	App  *APICredentialsBody  `json:"app,omitempty"`
	User **APICredentialsBody `json:"user,omitempty"`
}

// APICredentials returns the wire form of credentials for their type. The
// refresh token, also inside raw, is included only when withRefreshToken
// is true.
func APICredentials(c *Credentials, withRefreshToken bool) *APICredentialsBody {
	m := &APICredentialsBody{Type: c.Type}
	raw := func() *map[string]any {
		r := c.Raw
		if _, ok := r["refresh_token"]; ok && !withRefreshToken {
			r = make(map[string]any, len(c.Raw))
			for k, v := range c.Raw {
				if k != "refresh_token" {
					r[k] = v
				}
			}
		}
		if r == nil {
			r = map[string]any{}
		}
		return &r
	}
	exp := func() {
		if c.ExpiresAt != nil {
			m.ExpiresAt = httpapi.Time(*c.ExpiresAt)
		}
	}
	switch c.Type {
	case integrations.AuthModeOAuth2:
		m.AccessToken = &c.AccessToken
		if withRefreshToken {
			m.RefreshToken = c.RefreshToken
		}
		exp()
		m.Raw = raw()
		m.ConfigOverride = c.ConfigOverride
	case integrations.AuthModeOAuth1:
		m.OAuthToken, m.OAuthTokenSecret, m.Raw = &c.OAuthToken, &c.OAuthTokenSecret, raw()
	case integrations.AuthModeOAuth2CC:
		m.Token, m.ClientID, m.ClientSecret, m.Raw = &c.Token, &c.ClientID, &c.ClientSecret, raw()
		exp()
		apiClientKeys(m, c)
	case integrations.AuthModeAPIKey:
		m.APIKey = &c.APIKey
	case integrations.AuthModeBasic:
		m.Username, m.Password = &c.Username, &c.Password
	case integrations.AuthModeApp:
		m.AccessToken, m.Raw = &c.AccessToken, raw()
		exp()
		m.JWTToken = c.JWTToken
	case integrations.AuthModeTBA:
		m.TokenID, m.TokenSecret = &c.TokenID, &c.TokenSecret
		m.ConfigOverride = c.ConfigOverride
	case integrations.AuthModeAWSSigV4:
		m.APIAWSSigV4, m.Raw = apiAWSSigV4(c), raw()
		exp()
	case integrations.AuthModeCustom:
		return apiCustomCredentials(c, withRefreshToken)
	case integrations.AuthModeNone:
		return &APICredentialsBody{}
	case integrations.AuthModeTwoStep, integrations.AuthModeJWT, integrations.AuthModeSignature, integrations.AuthModeBill:
		apiTokenCredentials(m, c, withRefreshToken)
	}
	return m
}

func integrationKey(r *http.Request) (string, error) {
	return integrationKeyOf(r, r.URL.Query())
}

// integrationKeyOf is integrationKey with the request's query parsed.
func integrationKeyOf(r *http.Request, q url.Values) (string, error) {
	k := q.Get("provider_config_key")
	if k == "" {
		k = r.Header.Get("Provider-Config-Key")
	}
	if k == "" {
		return "", httpapi.InvalidQuery("provider_config_key", "is required")
	}
	return k, nil
}

func connectionIDParam(r *http.Request) (string, error) {
	id := r.PathValue("connectionId")
	if !ValidConnectionID(id) {
		return "", store.Invalid("invalid_uri_params", "The connection id is invalid.", store.FieldError{
			Code: "invalid_value", Message: "must be 1 to 255 characters without control characters", Path: []string{"connectionId"}})
	}
	return id, nil
}

// target returns the integration key and connection id a request names.
func target(r *http.Request) (key, id string, err error) {
	if id, err = connectionIDParam(r); err != nil {
		return "", "", err
	}
	key, err = integrationKey(r)
	return key, id, err
}

// APIListedConnection is a connection as GET /connections lists it: its
// list form and its state.
type APIListedConnection struct {
	APIConnection
	Health Health `json:"health"`
}

// apiList is the answer of GET /connections. NextCursor, the cursor of
// the next page, is null on the last.
type apiList struct {
	Connections []APIListedConnection `json:"connections"`
	NextCursor  *string               `json:"next_cursor"`
}

// listStatusCursor reads the status and cursor parameters of GET
// /connections: a cursor with a page is refused, naming both.
func listStatusCursor(q url.Values) (status string, after int64, err error) {
	var fe []store.FieldError
	for _, name := range []string{"status", "cursor"} {
		if len(q[name]) > 1 {
			fe = append(fe, store.FieldError{Code: "invalid_value", Message: "given more than once", Path: []string{name}})
		}
	}
	switch status = q.Get("status"); status {
	case "", HealthOK, HealthError, HealthAuthError, HealthSyncError, HealthPaused:
	default:
		fe = append(fe, store.FieldError{Code: "invalid_value", Message: "must be ok, error, auth_error, sync_error or paused",
			Path: []string{"status"}})
	}
	if v := q.Get("cursor"); v != "" {
		if after, err = keyset.ParseID(v); err != nil {
			fe = append(fe, store.FieldError{Code: "invalid_value", Message: "not a next_cursor of this list", Path: []string{"cursor"}})
		} else if q.Get("page") != "" {
			fe = append(fe, store.FieldError{Code: "invalid_value", Message: "cannot be given with page: page through the list with one or the other",
				Path: []string{"cursor"}})
		}
	}
	if len(fe) > 0 {
		return "", 0, store.Invalid("invalid_query_params", "The query is invalid.", fe...)
	}
	return status, after, nil
}

// Routes registers the connection routes.
func (s *Service) Routes(rt *httpapi.Router) {
	list := func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
		q := r.URL.Query()
		in := ListInput{ConnectionID: q.Get("connectionId"), Search: q.Get("search"), EndUserID: q.Get("endUserId"),
			EndUserOrganizationID: q.Get("endUserOrganizationId")}
		if in.EndUserID == "" {
			in.EndUserID = q.Get("userId")
		}
		for _, v := range q["integrationId"] {
			in.IntegrationKeys = append(in.IntegrationKeys, strings.Split(v, ",")...)
		}
		for k, vs := range q {
			if tag, ok := strings.CutPrefix(k, "tags["); ok && strings.HasSuffix(tag, "]") && len(vs) > 0 {
				if in.Tags == nil {
					in.Tags = map[string]string{}
				}
				in.Tags[strings.ToLower(strings.TrimSuffix(tag, "]"))] = vs[len(vs)-1]
			}
		}
		for name, v := range map[string]string{"connectionId": in.ConnectionID, "search": in.Search, "endUserId": in.EndUserID} {
			if len(v) > 255 {
				return httpapi.InvalidQuery(name, "must be at most 255 characters")
			}
		}
		var err error
		if in.Limit, err = httpapi.QueryInt(r, "limit", DefaultListLimit, 1, DefaultListLimit); err != nil {
			return err
		}
		if in.Page, err = httpapi.QueryInt(r, "page", 0, 0, 1_000_000); err != nil {
			return err
		}
		if in.Status, in.After, err = listStatusCursor(q); err != nil {
			return err
		}
		page, err := s.ListPage(r.Context(), p.EnvironmentID, in)
		if err != nil {
			return err
		}
		out := apiList{Connections: make([]APIListedConnection, len(page.Connections))}
		for i, c := range page.Connections {
			out.Connections[i] = APIListedConnection{APIConnection: API(c), Health: page.Health[i]}
		}
		if page.Next != 0 {
			next := keyset.FormatID(page.Next)
			out.NextCursor = &next
		}
		httpapi.WriteJSON(w, http.StatusOK, out)
		return nil
	}
	get := func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
		id, err := connectionIDParam(r)
		if err != nil {
			return err
		}
		q := r.URL.Query()
		key, err := integrationKeyOf(r, q)
		if err != nil {
			return err
		}
		var opts GetOptions
		var withRefresh bool
		if opts.ForceRefresh, err = httpapi.BoolParam(q, "force_refresh"); err != nil {
			return err
		}
		if withRefresh, err = httpapi.BoolParam(q, "refresh_token"); err != nil {
			return err
		}
		if opts.RefreshGitHubAppJWT, err = httpapi.BoolParam(q, "refresh_github_app_jwt_token"); err != nil {
			return err
		}
		withCreds := p.Allows(environments.ScopeConnectionsReadCredentials)
		if !withCreds && (opts.ForceRefresh || withRefresh || opts.RefreshGitHubAppJWT) {
			return store.Errorf(store.ErrForbidden, "forbidden", "The API key lacks the scope %s.", environments.ScopeConnectionsReadCredentials)
		}
		c, err := s.Get(r.Context(), p.EnvironmentID, key, id, opts)
		if err != nil {
			return err
		}
		httpapi.WriteJSON(w, http.StatusOK, fullAnswer{c, withCreds, withRefresh})
		return nil
	}
	importHandler := func(status int) httpapi.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			var in ImportInput
			if err := httpapi.Decode(r, &in); err != nil {
				return err
			}
			return s.writeImported(w, r, p, in, status)
		}
	}
	// POST /connections takes one import object, or an array of them (a
	// bulk import, with its own body limit).
	singleLimit, bulkLimit := rt.BodyLimit(), s.maxImportBody
	if bulkLimit <= 0 {
		bulkLimit = DefaultMaxImportBody
	}
	bulkLimit = max(bulkLimit, singleLimit)
	importOrBulk := func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
		b, err := httpapi.ReadBodyLimited(w, r, func(first byte) int64 {
			if first == '[' {
				return bulkLimit
			}
			return singleLimit
		})
		if err != nil {
			return err
		}
		if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '[' {
			var in ImportInput
			if err := httpapi.Unmarshal(b, &in); err != nil {
				return err
			}
			return s.writeImported(w, r, p, in, http.StatusCreated)
		}
		ins, err := DecodeImportBatch(b)
		if err != nil {
			return err
		}
		res, err := s.ImportBatch(r.Context(), p.EnvironmentID, ins)
		if err != nil {
			return err
		}
		out := APIImportBatch{Connections: make([]APIImported, len(res))}
		for i, r := range res {
			c := r.Connection
			out.Connections[i] = APIImported{ID: c.ID, ConnectionID: c.ConnectionID, ProviderConfigKey: c.IntegrationKey, Result: "updated"}
			if r.Created {
				out.Connections[i].Result = "created"
				out.Created++
			} else {
				out.Updated++
			}
		}
		httpapi.WriteJSON(w, http.StatusOK, out)
		return nil
	}
	metadata := func(merge bool) httpapi.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			var in struct {
				Metadata          json.RawMessage `json:"metadata"`
				ConnectionID      StringList      `json:"connection_id"`
				ProviderConfigKey string          `json:"provider_config_key"`
			}
			if err := httpapi.Decode(r, &in); err != nil {
				return err
			}
			if in.ProviderConfigKey == "" {
				return httpapi.InvalidField("is required", "provider_config_key")
			}
			if len(in.ConnectionID) == 0 {
				return httpapi.InvalidField("is required", "connection_id")
			}
			if len(in.ConnectionID) > 1000 {
				return httpapi.InvalidField("must list at most 1000 connection ids", "connection_id")
			}
			for i, id := range in.ConnectionID {
				if !ValidConnectionID(id) {
					return httpapi.InvalidField("must be 1 to 255 characters without control characters", "connection_id", strconv.Itoa(i))
				}
			}
			md, err := decodeObject(in.Metadata, "metadata")
			if err != nil {
				return err
			}
			if err := s.SetMetadata(r.Context(), p.EnvironmentID, in.ProviderConfigKey, in.ConnectionID, md, merge); err != nil {
				return err
			}
			var cid any = in.ConnectionID[0]
			if len(in.ConnectionID) > 1 {
				cid = []string(in.ConnectionID)
			}
			httpapi.WriteJSON(w, http.StatusOK, map[string]any{"metadata": md, "provider_config_key": in.ProviderConfigKey, "connection_id": cid})
			return nil
		}
	}
	legacyMetadata := func(merge bool) httpapi.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			id, err := connectionIDParam(r)
			if err != nil {
				return err
			}
			key := r.Header.Get("Provider-Config-Key")
			if key == "" {
				key = r.URL.Query().Get("provider_config_key")
			}
			if key == "" {
				return store.Invalid("invalid_headers", "The Provider-Config-Key header is required.", store.FieldError{
					Code: "required", Message: "is required", Path: []string{"provider-config-key"}})
			}
			b, err := httpapi.ReadJSON(r)
			if err != nil {
				return err
			}
			md, err := decodeObject(b, "metadata")
			if err != nil {
				return err
			}
			if err := s.SetMetadata(r.Context(), p.EnvironmentID, key, []string{id}, md, merge); err != nil {
				return err
			}
			httpapi.WriteJSON(w, http.StatusOK, map[string]any{"metadata": md, "provider_config_key": key, "connection_id": id})
			return nil
		}
	}
	patch := func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
		key, id, err := target(r)
		if err != nil {
			return err
		}
		var in PatchInput
		if err := httpapi.Decode(r, &in); err != nil {
			return err
		}
		if _, err := s.Patch(r.Context(), p.EnvironmentID, key, id, in); err != nil {
			return err
		}
		httpapi.WriteJSON(w, http.StatusOK, map[string]bool{"success": true})
		return nil
	}
	del := func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
		key, id, err := target(r)
		if err != nil {
			return err
		}
		if err := s.Delete(r.Context(), p.EnvironmentID, key, id); err != nil {
			return err
		}
		httpapi.WriteJSON(w, http.StatusOK, map[string]bool{"success": true})
		return nil
	}
	read, create := environments.ScopeConnectionsRead, environments.ScopeConnectionsCreate
	update, remove := environments.ScopeConnectionsUpdate, environments.ScopeConnectionsDelete
	for _, r := range []httpapi.Route{
		{Pattern: "GET /connections", Scope: read, Handler: list},
		{Pattern: "GET /connection", Scope: read, Handler: list},
		{Pattern: "GET /connections/{connectionId...}", Scope: read, Handler: get},
		{Pattern: "GET /connection/{connectionId...}", Scope: read, Handler: get},
		{Pattern: "POST /connections", Scope: create, Handler: importOrBulk, MaxBody: bulkLimit},
		{Pattern: "POST /connection", Scope: create, Handler: importHandler(http.StatusCreated), Style: httpapi.StyleMessage},
		{Pattern: "POST /connections/metadata", Scope: update, Handler: metadata(false)},
		{Pattern: "PATCH /connections/metadata", Scope: update, Handler: metadata(true)},
		{Pattern: "POST /connection/metadata", Scope: update, Handler: metadata(false)},
		{Pattern: "PATCH /connection/metadata", Scope: update, Handler: metadata(true)},
		{Pattern: "POST /connection/{connectionId}/metadata", Scope: update, Handler: legacyMetadata(false)},
		{Pattern: "PATCH /connection/{connectionId}/metadata", Scope: update, Handler: legacyMetadata(true)},
		{Pattern: "PATCH /connections/{connectionId...}", Scope: update, Handler: patch},
		{Pattern: "DELETE /connections/{connectionId...}", Scope: remove, Handler: del},
		{Pattern: "DELETE /connection/{connectionId...}", Scope: remove, Handler: del, Style: httpapi.StyleMessage},
	} {
		rt.Handle(r)
	}
}

// writeImported imports one connection and answers status (201) when it
// created it, 200 when it updated it, with its list form.
func (s *Service) writeImported(w http.ResponseWriter, r *http.Request, p *httpapi.Principal, in ImportInput, status int) error {
	c, created, err := s.Import(r.Context(), p.EnvironmentID, in)
	if err != nil {
		return err
	}
	st := http.StatusOK
	if created {
		st = status
	}
	httpapi.WriteJSON(w, st, API(c))
	return nil
}

// APIImportBatch is the answer of a bulk import: the connections in the
// order of the request, and how many were created and updated.
type APIImportBatch struct {
	Connections []APIImported `json:"connections"`
	Created     int           `json:"created"`
	Updated     int           `json:"updated"`
}

// APIImported is one connection of a bulk import's answer: its id (that
// of the list form), identity, and whether the import created or updated
// it.
type APIImported struct {
	ID                int64  `json:"id"`
	ConnectionID      string `json:"connection_id"`
	ProviderConfigKey string `json:"provider_config_key"`
	// Result is "created" or "updated".
	Result string `json:"result"`
}

func decodeObject(raw json.RawMessage, field string) (map[string]any, error) {
	b := []byte(strings.TrimSpace(string(raw)))
	if len(b) == 0 || b[0] != '{' {
		return nil, httpapi.InvalidField("must be an object", field)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, httpapi.InvalidField("must be an object", field)
	}
	return m, nil
}
