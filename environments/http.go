package environments

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

// Routes registers the environment routes: the settings of the caller's
// environment (/environment), its webhook signing key, its API keys
// (/environment/api-keys), the calling key (/environment/key) and its
// variables (/environment-variables).
func (s *Service) Routes(rt *httpapi.Router) {
	rt.Handle(httpapi.Route{Pattern: "GET /environment", Scope: ScopeSettingsRead, Handler: s.getEnvironmentHTTP})
	rt.Handle(httpapi.Route{Pattern: "PATCH /environment", Scope: ScopeSettingsWrite, Handler: s.patchEnvironmentHTTP})
	rt.Handle(httpapi.Route{Pattern: "POST /environment/webhook-signing-key", Scope: ScopeSettingsWrite, Handler: s.rotateSigningKeyHTTP})
	rt.Handle(httpapi.Route{Pattern: "GET /environment/api-keys", Scope: ScopeKeysRead, Handler: s.listKeysHTTP})
	rt.Handle(httpapi.Route{Pattern: "POST /environment/api-keys", Scope: ScopeKeysWrite, Handler: s.createKeyHTTP})
	rt.Handle(httpapi.Route{Pattern: "DELETE /environment/api-keys/{id}", Scope: ScopeKeysWrite, Handler: s.deleteKeyHTTP})
	rt.Handle(httpapi.Route{Pattern: "GET /environment/key", AnyScope: true, Handler: s.callingKeyHTTP})
	rt.Handle(httpapi.Route{
		Pattern: "GET /environment-variables",
		Scope:   ScopeEnvironmentVariablesRead,
		Handler: func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
			vars, err := s.Variables(r.Context(), p.EnvironmentID)
			if err != nil {
				return err
			}
			httpapi.WriteJSON(w, http.StatusOK, vars)
			return nil
		},
	})
	rt.Handle(httpapi.Route{Pattern: "PUT /environment-variables", Scope: ScopeEnvironmentVariablesWrite, Handler: s.putVariablesHTTP})
}

// environmentJSON is the wire shape of GET and PATCH /environment: the
// settings, never the signing key.
type environmentJSON struct {
	Name            string            `json:"name"`
	WebhookURLs     []string          `json:"webhook_urls"`
	WebhookSettings WebhookSettings   `json:"webhook_settings"`
	ConnectUI       ConnectUISettings `json:"connect_ui"`
	CallbackURL     *string           `json:"callback_url"`
	HasSigningKey   bool              `json:"has_signing_key"`
	CreatedAt       string            `json:"created_at"`
	UpdatedAt       string            `json:"updated_at"`
}

func toEnvironmentJSON(env *Environment) environmentJSON {
	out := environmentJSON{
		Name:            env.Name,
		WebhookURLs:     append([]string{}, env.WebhookURLs...),
		WebhookSettings: env.WebhookSettings,
		ConnectUI:       env.ConnectUI,
		HasSigningKey:   env.SealedWebhookSigningKey != "",
		CreatedAt:       httpapi.Time(env.CreatedAt),
		UpdatedAt:       httpapi.Time(env.UpdatedAt),
	}
	if env.CallbackURL != "" {
		u := env.CallbackURL
		out.CallbackURL = &u
	}
	return out
}

func (s *Service) getEnvironmentHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	env, err := s.Get(r.Context(), p.EnvironmentID)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": toEnvironmentJSON(env)})
	return nil
}

// patchEnvironmentHTTP changes the members given: webhook_urls and
// callback_url replace the value, webhook_settings and connect_ui change
// the members they hold and keep the others.
func (s *Service) patchEnvironmentHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	m, err := decodeObject(r, "webhook_urls", "webhook_settings", "connect_ui", "callback_url")
	if err != nil {
		return err
	}
	var in UpdateInput
	var patches []func(*Environment)
	if raw, ok := m["webhook_urls"]; ok {
		var urls []string
		if isNull(raw) || json.Unmarshal(raw, &urls) != nil {
			return invalidType("an array of strings", "webhook_urls")
		}
		if len(urls) > MaxWebhookURLs {
			return httpapi.InvalidField(fmt.Sprintf("at most %d URLs", MaxWebhookURLs), "webhook_urls")
		}
		in.WebhookURLs = &urls
	}
	if raw, ok := m["webhook_settings"]; ok {
		f, err := webhookSettingsPatch(raw)
		if err != nil {
			return err
		}
		patches = append(patches, f)
	}
	if raw, ok := m["connect_ui"]; ok {
		f, err := connectUIPatch(raw)
		if err != nil {
			return err
		}
		patches = append(patches, f)
	}
	if raw, ok := m["callback_url"]; ok {
		u := ""
		if !isNull(raw) {
			if json.Unmarshal(raw, &u) != nil {
				return invalidType("a string or null", "callback_url")
			}
			if u == "" {
				return httpapi.InvalidField("must be an absolute http or https URL (null clears it)", "callback_url")
			}
			if err := validateURL(u, "callback_url"); err != nil {
				return err
			}
		}
		in.CallbackURL = &u
	}
	var env *Environment
	if len(m) == 0 {
		env, err = s.Get(r.Context(), p.EnvironmentID)
	} else {
		var patch func(*Environment)
		if len(patches) > 0 {
			patch = func(env *Environment) {
				for _, f := range patches {
					f(env)
				}
			}
		}
		env, err = s.update(r.Context(), p.EnvironmentID, in, patch)
	}
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": toEnvironmentJSON(env)})
	return nil
}

// webhookSettingsPatch reads the webhook_settings member of PATCH
// /environment: booleans named as in WebhookSettings' JSON.
func webhookSettingsPatch(raw json.RawMessage) (func(*Environment), error) {
	m, err := memberObject(raw, "webhook_settings")
	if err != nil {
		return nil, err
	}
	fields := map[string]func(*WebhookSettings) *bool{
		"send_auth_creation":      func(w *WebhookSettings) *bool { return &w.SendAuthCreation },
		"send_auth_refresh_error": func(w *WebhookSettings) *bool { return &w.SendAuthRefreshError },
		"send_sync":               func(w *WebhookSettings) *bool { return &w.SendSync },
		"send_empty_sync":         func(w *WebhookSettings) *bool { return &w.SendEmptySync },
		"send_async_action":       func(w *WebhookSettings) *bool { return &w.SendAsyncAction },
		"send_forward":            func(w *WebhookSettings) *bool { return &w.SendForward },
	}
	if err := unknownMembers(m, slices.Sorted(maps.Keys(fields)), "webhook_settings"); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for name, v := range m {
		var b bool
		if isNull(v) || json.Unmarshal(v, &b) != nil {
			return nil, invalidType("a boolean", "webhook_settings", name)
		}
		set[name] = b
	}
	return func(env *Environment) {
		for name, b := range set {
			*fields[name](&env.WebhookSettings) = b
		}
	}, nil
}

// connectUIPatch reads the connect_ui member of PATCH /environment: theme,
// primary_color_light and primary_color_dark (null restores the default
// colour) and hide_secured_by.
func connectUIPatch(raw json.RawMessage) (func(*Environment), error) {
	m, err := memberObject(raw, "connect_ui")
	if err != nil {
		return nil, err
	}
	if err := unknownMembers(m, []string{"theme", "primary_color_light", "primary_color_dark", "hide_secured_by"}, "connect_ui"); err != nil {
		return nil, err
	}
	var fs []func(*ConnectUISettings)
	if v, ok := m["theme"]; ok {
		var theme string
		if isNull(v) || json.Unmarshal(v, &theme) != nil {
			return nil, invalidType("a string", "connect_ui", "theme")
		}
		if theme != "light" && theme != "dark" && theme != "system" {
			return nil, httpapi.InvalidField("must be light, dark or system", "connect_ui", "theme")
		}
		fs = append(fs, func(c *ConnectUISettings) { c.Theme = theme })
	}
	for _, name := range []string{"primary_color_light", "primary_color_dark"} {
		v, ok := m[name]
		if !ok {
			continue
		}
		color := ""
		if !isNull(v) {
			if json.Unmarshal(v, &color) != nil {
				return nil, invalidType("a string or null", "connect_ui", name)
			}
			if !colorRe.MatchString(color) {
				return nil, httpapi.InvalidField("must be a colour such as #00b2e3 or #0be (null restores the default)", "connect_ui", name)
			}
		}
		if name == "primary_color_light" {
			fs = append(fs, func(c *ConnectUISettings) { c.PrimaryColorLight = color })
		} else {
			fs = append(fs, func(c *ConnectUISettings) { c.PrimaryColorDark = color })
		}
	}
	if v, ok := m["hide_secured_by"]; ok {
		var hide bool
		if isNull(v) || json.Unmarshal(v, &hide) != nil {
			return nil, invalidType("a boolean", "connect_ui", "hide_secured_by")
		}
		fs = append(fs, func(c *ConnectUISettings) { c.HideSecuredBy = hide })
	}
	return func(env *Environment) {
		for _, f := range fs {
			f(&env.ConnectUI)
		}
	}, nil
}

func (s *Service) rotateSigningKeyHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	if err := noBody(r); err != nil {
		return err
	}
	key, err := s.RotateWebhookSigningKey(r.Context(), p.EnvironmentID)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]string{"signing_key": key}})
	return nil
}

// apiKeyJSON is the wire shape of an API key: never the key or its hash.
type apiKeyJSON struct {
	ID        int64    `json:"id"`
	Name      string   `json:"name"`
	Hint      string   `json:"hint"`
	Scopes    []string `json:"scopes"`
	CreatedAt string   `json:"created_at"`
}

func toAPIKeyJSON(k *APIKey) apiKeyJSON {
	return apiKeyJSON{ID: k.ID, Name: k.Name, Hint: k.Hint, Scopes: append([]string{}, k.Scopes...), CreatedAt: httpapi.Time(k.CreatedAt)}
}

func (s *Service) listKeysHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	keys, err := s.ListAPIKeys(r.Context(), p.EnvironmentID)
	if err != nil {
		return err
	}
	out := make([]apiKeyJSON, 0, len(keys))
	for _, k := range keys {
		out = append(out, toAPIKeyJSON(k))
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": out})
	return nil
}

// maxKeyName is the longest name of an API key created through the API.
const maxKeyName = 255

// createKeyHTTP creates a key with scopes the caller holds itself: a key
// cannot make a key that may do more than it may.
func (s *Service) createKeyHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	m, err := decodeObject(r, "name", "scopes")
	if err != nil {
		return err
	}
	var name string
	raw, ok := m["name"]
	if !ok {
		return httpapi.InvalidField("is required", "name")
	}
	if isNull(raw) || json.Unmarshal(raw, &name) != nil {
		return invalidType("a string", "name")
	}
	if strings.TrimSpace(name) == "" || len(name) > maxKeyName || strings.ContainsFunc(name, unicode.IsControl) {
		return httpapi.InvalidField(fmt.Sprintf("must be 1 to %d characters without control characters", maxKeyName), "name")
	}
	var scopes []string
	raw, ok = m["scopes"]
	if !ok {
		return httpapi.InvalidField("is required (an empty array makes a key without scopes)", "scopes")
	}
	if isNull(raw) || json.Unmarshal(raw, &scopes) != nil {
		return invalidType("an array of strings", "scopes")
	}
	for i, sc := range scopes {
		if !ValidScope(sc) {
			return httpapi.InvalidField(fmt.Sprintf("unknown scope %q", sc), "scopes", strconv.Itoa(i))
		}
		if slices.Index(scopes, sc) != i {
			return httpapi.InvalidField(fmt.Sprintf("scope %q is given twice", sc), "scopes", strconv.Itoa(i))
		}
	}
	for i, sc := range scopes {
		held := p.Allows(sc)
		if sc == ScopeAll {
			held = slices.Contains(p.Scopes, ScopeAll)
		}
		if !held {
			e := store.Errorf(store.ErrForbidden, "forbidden", "The API key cannot grant the scope %s, which it does not hold.", sc)
			e.Errors = []store.FieldError{{Code: "forbidden", Message: "not held by the calling key", Path: []string{"scopes", strconv.Itoa(i)}}}
			return e
		}
	}
	key, k, err := s.CreateAPIKey(r.Context(), p.EnvironmentID, NewAPIKey{Name: name, Scopes: scopes})
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusCreated, map[string]any{"data": struct {
		apiKeyJSON
		Key string `json:"key"`
	}{toAPIKeyJSON(k), key}})
	return nil
}

func (s *Service) deleteKeyHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return store.Invalid("invalid_uri_params", "The path is invalid.", store.FieldError{
			Code: "invalid_value", Message: "must be the id of an API key, a positive integer", Path: []string{"id"}})
	}
	if id == p.KeyID {
		return store.Conflict("cannot_revoke_own_key",
			"An API key cannot revoke itself: revoke it with another key of the environment.")
	}
	// No escalation by revocation either: a key may revoke only keys
	// whose scopes it holds itself (environment:* only by environment:*).
	keys, err := s.ListAPIKeys(r.Context(), p.EnvironmentID)
	if err != nil {
		return err
	}
	if i := slices.IndexFunc(keys, func(k *APIKey) bool { return k.ID == id }); i >= 0 {
		for _, sc := range keys[i].Scopes {
			if !p.Allows(sc) {
				return store.Errorf(store.ErrForbidden, "forbidden", "The API key lacks the scope %s, which the key to revoke holds.", sc)
			}
		}
	}
	if err := s.DeleteAPIKey(r.Context(), p.EnvironmentID, id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// callingKeyHTTP answers the key the request authenticates with, whatever
// its scopes, so that a client can show only what the key may do.
func (s *Service) callingKeyHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	keys, err := s.ListAPIKeys(r.Context(), p.EnvironmentID)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(keys, func(k *APIKey) bool { return k.ID == p.KeyID })
	if i < 0 {
		// Revoked since it was authenticated.
		return store.Errorf(store.ErrUnauthorized, "unknown_account", "Authentication failed: the API key is unknown.")
	}
	k := keys[i]
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]any{
		"id": k.ID, "name": k.Name, "hint": k.Hint, "scopes": append([]string{}, p.Scopes...), "environment": p.Environment,
	}})
	return nil
}

// putVariablesHTTP replaces every variable of the environment with the
// body's array of {"name","value"}.
func (s *Service) putVariablesHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	b, err := httpapi.ReadJSON(r)
	if err != nil {
		return err
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '[' {
		return store.Invalid("invalid_body", "The request body must be a JSON array of {\"name\", \"value\"} objects.")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return httpapi.DecodeError(err)
	}
	if len(items) > MaxVariables {
		return store.Invalid("invalid_body", "The request body is invalid.", store.FieldError{
			Code: "invalid_size", Message: fmt.Sprintf("at most %d variables", MaxVariables), Path: []string{}})
	}
	vars := make(map[string]string, len(items))
	for i, item := range items {
		at := strconv.Itoa(i)
		m, err := memberObject(item, at)
		if err != nil {
			return err
		}
		if err := unknownMembers(m, []string{"name", "value"}, at); err != nil {
			return err
		}
		var name, value string
		if v, ok := m["name"]; !ok || isNull(v) || json.Unmarshal(v, &name) != nil {
			return invalidType("a string", at, "name")
		}
		if v, ok := m["value"]; !ok || isNull(v) || json.Unmarshal(v, &value) != nil {
			return invalidType("a string", at, "value")
		}
		if !ValidVariableName(name) {
			return httpapi.InvalidField("must be 1 to 255 letters, digits and '_', not starting with a digit", at, "name")
		}
		if len(value) > MaxVariableValue {
			return httpapi.InvalidField(fmt.Sprintf("must be at most %d bytes", MaxVariableValue), at, "value")
		}
		if _, dup := vars[name]; dup {
			return store.Invalid("invalid_body", "The request body is invalid.", store.FieldError{
				Code: "duplicate", Message: fmt.Sprintf("the variable %s is given twice", name), Path: []string{at, "name"}})
		}
		vars[name] = value
	}
	if err := s.SetVariables(r.Context(), p.EnvironmentID, vars); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// decodeObject reads a JSON object body (with the checks of
// httpapi.Unmarshal) and refuses a member not in allowed.
func decodeObject(r *http.Request, allowed ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := httpapi.Decode(r, &m); err != nil {
		return nil, err
	}
	if err := unknownMembers(m, allowed); err != nil {
		return nil, err
	}
	return m, nil
}

// memberObject decodes raw, the value at path, as a JSON object.
func memberObject(raw json.RawMessage, path ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if isNull(raw) || json.Unmarshal(raw, &m) != nil {
		return nil, invalidType("an object", path...)
	}
	return m, nil
}

// unknownMembers refuses, naming each, the members of m not in allowed
// (the object at path).
func unknownMembers(m map[string]json.RawMessage, allowed []string, path ...string) error {
	hint := "none is allowed"
	if len(allowed) > 0 {
		hint = "allowed: " + strings.Join(allowed, ", ")
	}
	var fe []store.FieldError
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(allowed, k) {
			fe = append(fe, store.FieldError{Code: "unrecognized_keys",
				Message: fmt.Sprintf("unknown member %q; %s", k, hint), Path: append(slices.Clip(path), k)})
		}
	}
	if fe != nil {
		return store.Invalid("invalid_body", "The request body is invalid.", fe...)
	}
	return nil
}

// noBody refuses a request body other than an empty object: the route
// takes none.
func noBody(r *http.Request) error {
	b, err := httpapi.ReadBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if err := httpapi.Unmarshal(b, &m); err != nil {
		return err
	}
	return unknownMembers(m, nil)
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func invalidType(want string, path ...string) error {
	return store.Invalid("invalid_body", "The request body is invalid.", store.FieldError{
		Code: "invalid_type", Message: "expected " + want, Path: path})
}
