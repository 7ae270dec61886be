package functions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

func (s *Service) syncRoutes(rt *httpapi.Router) {
	read, write := environments.ScopeSyncsRead, environments.ScopeSyncsWrite
	for _, r := range []httpapi.Route{
		{Pattern: "POST /sync/trigger", Scope: write, Handler: s.triggerSyncHTTP},
		{Pattern: "POST /sync/start", Scope: write, Handler: s.pauseStartHTTP(false)},
		{Pattern: "POST /sync/pause", Scope: write, Handler: s.pauseStartHTTP(true)},
		{Pattern: "POST /sync/cancel", Scope: write, Handler: s.cancelSyncHTTP},
		{Pattern: "GET /sync/status", Scope: read, Handler: s.syncStatusHTTP},
		{Pattern: "PUT /sync/update-connection-frequency", Scope: write, Handler: s.frequencyHTTP},
		{Pattern: "POST /sync/{name}/variant/{variant}", Scope: write, Handler: s.variantHTTP(true)},
		{Pattern: "DELETE /sync/{name}/variant/{variant}", Scope: write, Handler: s.variantHTTP(false)},
	} {
		rt.Handle(r)
	}
}

// syncRefs is the syncs field of a sync request: names, or {name,
// variant} objects.
type syncRefs []SyncRef

func (l *syncRefs) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return &httpapi.FieldErr{Path: []string{"syncs"}, Message: "must be an array of sync names or {name, variant} objects"}
	}
	out := make(syncRefs, 0, len(raw))
	for i, r := range raw {
		r = bytes.TrimSpace(r)
		var ref SyncRef
		if len(r) > 0 && r[0] == '"' {
			if err := json.Unmarshal(r, &ref.Name); err != nil {
				return err
			}
		} else {
			var o struct {
				Name    *string `json:"name"`
				Variant *string `json:"variant"`
			}
			if err := json.Unmarshal(r, &o); err != nil || o.Name == nil {
				return &httpapi.FieldErr{Path: []string{"syncs", fmt.Sprint(i)}, Message: "must be a sync name or a {name, variant} object"}
			}
			ref.Name = *o.Name
			if o.Variant != nil {
				ref.Variant = *o.Variant
			}
		}
		if ref.Name == "" {
			return &httpapi.FieldErr{Path: []string{"syncs", fmt.Sprint(i)}, Message: "the sync name is empty"}
		}
		if ref.Variant != "" && ref.Variant != BaseVariant && !variantPattern.MatchString(ref.Variant) {
			return &httpapi.FieldErr{Path: []string{"syncs", fmt.Sprint(i), "variant"}, Message: "a variant is 1 to 255 letters, digits, '-' or '_'"}
		}
		out = append(out, ref)
	}
	*l = out
	return nil
}

// syncBody is the body of POST /sync/trigger, /sync/start and /sync/pause.
type syncBody struct {
	Syncs             *syncRefs `json:"syncs"`
	ProviderConfigKey string    `json:"provider_config_key"`
	ConnectionID      *string   `json:"connection_id"`
	Opts              *struct {
		Reset      bool `json:"reset"`
		EmptyCache bool `json:"emptyCache"`
	} `json:"opts"`
	SyncMode   *json.RawMessage `json:"sync_mode"`
	FullResync *bool            `json:"full_resync"`
}

// target checks a sync body and returns its target.
func (b *syncBody) target(env int64, syncsRequired bool) (SyncTarget, error) {
	var fe []store.FieldError
	if b.ProviderConfigKey == "" {
		fe = append(fe, store.FieldError{Code: "required", Message: "is required", Path: []string{"provider_config_key"}})
	}
	if b.Syncs == nil && syncsRequired {
		fe = append(fe, store.FieldError{Code: "required", Message: "is required", Path: []string{"syncs"}})
	}
	if b.ConnectionID != nil && *b.ConnectionID == "" {
		fe = append(fe, store.FieldError{Code: "invalid_string", Message: "must not be empty", Path: []string{"connection_id"}})
	}
	if len(fe) > 0 {
		return SyncTarget{}, store.Invalid("invalid_body", "The request body is invalid.", fe...)
	}
	t := SyncTarget{EnvironmentID: env, Integration: b.ProviderConfigKey}
	if b.ConnectionID != nil {
		t.ConnectionID = *b.ConnectionID
	}
	if b.Syncs != nil && len(*b.Syncs) > 0 {
		t.Syncs = *b.Syncs
	}
	return t, nil
}

func (s *Service) triggerSyncHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	if err := onlyQuery(r); err != nil {
		return err
	}
	var b syncBody
	if err := httpapi.Decode(r, &b); err != nil {
		return err
	}
	t, err := b.target(p.EnvironmentID, false)
	if err != nil {
		return err
	}
	var o TriggerOptions
	legacy := b.SyncMode != nil || b.FullResync != nil
	if legacy && b.Opts != nil {
		return store.Invalid("invalid_body", "opts cannot be given with sync_mode or full_resync.")
	}
	if b.Opts != nil {
		o.Reset, o.EmptyCache = b.Opts.Reset, b.Opts.EmptyCache
	}
	if b.SyncMode != nil {
		var mode any
		_ = json.Unmarshal(*b.SyncMode, &mode)
		switch mode {
		case "full_refresh", true:
			o.Reset = true
		case "full_refresh_and_clear_cache":
			o.Reset, o.EmptyCache = true, true
		case "incremental", false, nil:
		default:
			return httpapi.InvalidField("must be incremental, full_refresh or full_refresh_and_clear_cache", "sync_mode")
		}
	}
	if b.FullResync != nil && *b.FullResync {
		o.Reset = true
	}
	if err := s.TriggerSync(r.Context(), t, o); err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]bool{"success": true})
	return nil
}

func (s *Service) pauseStartHTTP(pause bool) httpapi.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
		if err := onlyQuery(r); err != nil {
			return err
		}
		var b syncBody
		if err := httpapi.Decode(r, &b); err != nil {
			return err
		}
		if b.Opts != nil || b.SyncMode != nil || b.FullResync != nil {
			return store.Invalid("invalid_body", "The request body is invalid.", store.FieldError{Code: "unrecognized_keys",
				Message: "only syncs, provider_config_key and connection_id are allowed", Path: []string{}})
		}
		t, err := b.target(p.EnvironmentID, true)
		if err != nil {
			return err
		}
		if pause {
			err = s.PauseSync(r.Context(), t)
		} else {
			err = s.StartSync(r.Context(), t)
		}
		if err != nil {
			return err
		}
		httpapi.WriteJSON(w, http.StatusOK, map[string]bool{"success": true})
		return nil
	}
}

// cancelSyncHTTP serves POST /sync/cancel: {provider_config_key, syncs,
// connection_id?} asks the runs in progress of the syncs to stop (see
// CancelSync) and answers {"success": true}, also when none was running.
func (s *Service) cancelSyncHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	if err := onlyQuery(r); err != nil {
		return err
	}
	var b syncBody
	if err := httpapi.Decode(r, &b); err != nil {
		return err
	}
	if b.Opts != nil || b.SyncMode != nil || b.FullResync != nil {
		return store.Invalid("invalid_body", "The request body is invalid.", store.FieldError{Code: "unrecognized_keys",
			Message: "only syncs, provider_config_key and connection_id are allowed", Path: []string{}})
	}
	t, err := b.target(p.EnvironmentID, true)
	if err != nil {
		return err
	}
	if err := s.CancelSync(r.Context(), t); err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]bool{"success": true})
	return nil
}

func (s *Service) syncStatusHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	if err := onlyQuery(r, "syncs", "provider_config_key", "connection_id"); err != nil {
		return err
	}
	q := r.URL.Query()
	var fe []store.FieldError
	key, list := q.Get("provider_config_key"), q.Get("syncs")
	if key == "" {
		fe = append(fe, store.FieldError{Code: "required", Message: "is required", Path: []string{"provider_config_key"}})
	}
	if list == "" {
		fe = append(fe, store.FieldError{Code: "required", Message: "is required (names, or * for all)", Path: []string{"syncs"}})
	}
	if len(fe) > 0 {
		return store.Invalid("invalid_query_params", "The query is invalid.", fe...)
	}
	t := SyncTarget{EnvironmentID: p.EnvironmentID, Integration: key, ConnectionID: q.Get("connection_id")}
	if list != "*" {
		for _, item := range strings.Split(list, ",") {
			item = strings.TrimSpace(item)
			name, variant, _ := strings.Cut(item, "::")
			if name == "" || (variant != "" && variant != BaseVariant && !variantPattern.MatchString(variant)) {
				return httpapi.InvalidQuery("syncs", fmt.Sprintf("%q is not a sync name or name::variant", item))
			}
			t.Syncs = append(t.Syncs, SyncRef{Name: name, Variant: variant})
		}
	}
	st, err := s.Status(r.Context(), t)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"syncs": st})
	return nil
}

func (s *Service) frequencyHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	if err := onlyQuery(r); err != nil {
		return err
	}
	var b struct {
		SyncName          string          `json:"sync_name"`
		SyncVariant       string          `json:"sync_variant"`
		ProviderConfigKey string          `json:"provider_config_key"`
		ConnectionID      string          `json:"connection_id"`
		Frequency         json.RawMessage `json:"frequency"`
	}
	if err := httpapi.Decode(r, &b); err != nil {
		return err
	}
	var fe []store.FieldError
	for _, f := range []struct{ name, v string }{{"sync_name", b.SyncName}, {"provider_config_key", b.ProviderConfigKey},
		{"connection_id", b.ConnectionID}} {
		if f.v == "" {
			fe = append(fe, store.FieldError{Code: "required", Message: "is required", Path: []string{f.name}})
		}
	}
	var freq *string
	switch {
	case len(b.Frequency) == 0:
		fe = append(fe, store.FieldError{Code: "required", Message: "is required (a frequency, or null to revert)", Path: []string{"frequency"}})
	case string(b.Frequency) == "null":
	default:
		var v string
		if err := json.Unmarshal(b.Frequency, &v); err != nil {
			fe = append(fe, store.FieldError{Code: "invalid_type", Message: "must be a string or null", Path: []string{"frequency"}})
		} else {
			freq = &v
		}
	}
	if len(fe) > 0 {
		return store.Invalid("invalid_body", "The request body is invalid.", fe...)
	}
	out, err := s.UpdateFrequency(r.Context(), p.EnvironmentID, b.ProviderConfigKey, b.ConnectionID,
		SyncRef{Name: b.SyncName, Variant: b.SyncVariant}, freq)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]string{"frequency": out})
	return nil
}

func (s *Service) variantHTTP(create bool) httpapi.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
		if err := onlyQuery(r); err != nil {
			return err
		}
		var b struct {
			ProviderConfigKey string `json:"provider_config_key"`
			ConnectionID      string `json:"connection_id"`
		}
		if err := httpapi.Decode(r, &b); err != nil {
			return err
		}
		var fe []store.FieldError
		if b.ProviderConfigKey == "" {
			fe = append(fe, store.FieldError{Code: "required", Message: "is required", Path: []string{"provider_config_key"}})
		}
		if b.ConnectionID == "" {
			fe = append(fe, store.FieldError{Code: "required", Message: "is required", Path: []string{"connection_id"}})
		}
		if len(fe) > 0 {
			return store.Invalid("invalid_body", "The request body is invalid.", fe...)
		}
		name, variant := r.PathValue("name"), r.PathValue("variant")
		if err := checkVariant(variant); err != nil {
			return store.Invalid("invalid_uri_params", "The path is invalid.", store.FieldError{Code: "invalid_string",
				Message: err.(*store.Error).Message, Path: []string{"variant"}})
		}
		if !create {
			if err := s.DeleteVariant(r.Context(), p.EnvironmentID, b.ProviderConfigKey, b.ConnectionID, name, variant); err != nil {
				return err
			}
			httpapi.WriteJSON(w, http.StatusOK, map[string]bool{"success": true})
			return nil
		}
		sc, err := s.CreateVariant(r.Context(), p.EnvironmentID, b.ProviderConfigKey, b.ConnectionID, name, variant)
		if err != nil {
			return err
		}
		httpapi.WriteJSON(w, http.StatusOK, map[string]string{"id": sc.ID, "name": sc.Name, "variant": sc.Variant})
		return nil
	}
}
