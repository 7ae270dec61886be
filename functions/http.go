package functions

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

// Routes registers the HTTP routes of functions: the deployed functions
// (/integrations/{key}/functions...), /scripts/config, provider templates,
// actions (/action/trigger, /action/{id}), syncs (/sync/...), records
// (/records, /records/prune) and the nango CLI's deployments
// (/sync/deploy..., /functions/deployments/bundle..., /cli/telemetry).
func (s *Service) Routes(rt *httpapi.Router) {
	read, write := environments.ScopeFunctionsRead, environments.ScopeFunctionsWrite
	for _, r := range []httpapi.Route{
		{Pattern: "GET /integrations/{key}/functions", Scope: read, Handler: s.listFunctionsHTTP},
		{Pattern: "GET /integrations/{key}/functions/{name}", Scope: read, Handler: s.getFunctionHTTP(false)},
		{Pattern: "GET /integrations/{key}/functions/{name}/code", Scope: read, Handler: s.getFunctionHTTP(true)},
		{Pattern: "DELETE /integrations/{key}/functions/{name}", Scope: write, Handler: s.deleteFunctionHTTP},
		{Pattern: "PATCH /integrations/{key}/functions/{name}", Scope: write, Handler: s.patchFunctionHTTP},
		{Pattern: "GET /scripts/config", Scope: read, Handler: s.scriptsConfigHTTP},
		{Pattern: "GET /providers/{provider}/templates", Scope: read, Handler: s.templatesHTTP},
		{Pattern: "POST /action/trigger", Scope: environments.ScopeActionsExecute, Handler: s.triggerActionHTTP},
		{Pattern: "GET /action/{id}", Scope: environments.ScopeActionsExecute, Handler: s.actionResultHTTP},
	} {
		rt.Handle(r)
	}
	s.syncRoutes(rt)
	s.recordRoutes(rt)
	s.deployRoutes(rt)
}

// onlyQuery refuses query parameters other than allowed.
func onlyQuery(r *http.Request, allowed ...string) error {
	var fe []store.FieldError
	for k := range r.URL.Query() {
		if !slices.Contains(allowed, k) {
			fe = append(fe, store.FieldError{Code: "unrecognized_keys", Message: fmt.Sprintf("unknown parameter %q", k), Path: []string{k}})
		}
	}
	if len(fe) > 0 {
		slices.SortFunc(fe, func(a, b store.FieldError) int { return strings.Compare(a.Path[0], b.Path[0]) })
		return store.Invalid("invalid_query_params", "The query is invalid.", fe...)
	}
	return nil
}

// kindQuery reads the type query parameter: sync, action, on-event, or
// empty.
func kindQuery(r *http.Request, required bool, allowed ...Kind) (Kind, error) {
	v := r.URL.Query().Get("type")
	if v == "" {
		if required {
			return "", httpapi.InvalidQuery("type", "is required")
		}
		return "", nil
	}
	for _, k := range allowed {
		if Kind(v) == k {
			return k, nil
		}
	}
	names := make([]string, len(allowed))
	for i, k := range allowed {
		names[i] = string(k)
	}
	return "", httpapi.InvalidQuery("type", "must be one of "+strings.Join(names, ", "))
}

// FunctionJSON is a deployed function as the API lists it.
type FunctionJSON struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Scopes               []string        `json:"scopes,omitempty"`
	Type                 Kind            `json:"type"`
	ID                   int64           `json:"id"`
	Enabled              bool            `json:"enabled"`
	LastDeployed         time.Time       `json:"last_deployed"`
	Source               string          `json:"source"`
	SDKVersion           string          `json:"sdk_version,omitempty"`
	Version              string          `json:"version"`
	Input                *string         `json:"input,omitempty"`
	Returns              []string        `json:"returns,omitempty"`
	JSONSchema           json.RawMessage `json:"json_schema,omitempty"`
	Runs                 *string         `json:"runs,omitempty"`
	AutoStart            *bool           `json:"auto_start,omitempty"`
	TrackDeletes         *bool           `json:"track_deletes,omitempty"`
	Endpoints            []Endpoint      `json:"endpoints,omitempty"`
	Event                Event           `json:"event,omitempty"`
	WebhookSubscriptions []string        `json:"webhookSubscriptions,omitempty"`
}

// functionJSON is the API form of f.
func functionJSON(f *Function) FunctionJSON {
	d := f.Definition
	out := FunctionJSON{Name: f.Name, Description: d.Description, Scopes: d.Scopes, Type: f.Kind, ID: f.ID,
		Enabled: f.Enabled, LastDeployed: f.DeployedAt, Source: f.Source, SDKVersion: f.SDKVersion, Version: f.Version,
		Endpoints: d.Endpoints}
	if f.Kind == KindOnEvent {
		out.Event = d.Event
		return out
	}
	if d.Input != "" {
		in := d.Input
		out.Input = &in
	}
	out.Returns = []string{}
	for _, m := range d.Models {
		out.Returns = append(out.Returns, m.Name)
	}
	out.JSONSchema = d.JSONSchema
	if len(out.JSONSchema) == 0 {
		out.JSONSchema = json.RawMessage("null")
	}
	if f.Kind == KindSync {
		runs, auto, track := d.Runs, d.AutoStart, d.TrackDeletes
		out.Runs, out.AutoStart, out.TrackDeletes = &runs, &auto, &track
		out.WebhookSubscriptions = d.WebhookSubscriptions
	}
	return out
}

// integrationOf checks that an integration exists and stores its
// registered functions.
func (s *Service) integrationOf(r *http.Request, p *httpapi.Principal) (string, error) {
	key := r.PathValue("key")
	if _, err := s.cfg.Integrations.Get(r.Context(), p.EnvironmentID, key); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "", store.NotFound("unknown_provider_config", "The integration %q was not found.", key)
		}
		return "", err
	}
	return key, s.deploy(r.Context(), p.EnvironmentID, key)
}

func (s *Service) listFunctionsHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	if err := onlyQuery(r, "type", "search", "page", "limit"); err != nil {
		return err
	}
	kind, err := kindQuery(r, false, KindSync, KindAction, KindOnEvent)
	if err != nil {
		return err
	}
	page, err := httpapi.QueryInt(r, "page", 0, 0, 1<<30)
	if err != nil {
		return err
	}
	limit, err := httpapi.QueryInt(r, "limit", 20, 1, 100)
	if err != nil {
		return err
	}
	search := strings.ToLower(r.URL.Query().Get("search"))
	key, err := s.integrationOf(r, p)
	if err != nil {
		return err
	}
	fs, err := s.st.ListFunctions(r.Context(), p.EnvironmentID, key)
	if err != nil {
		return err
	}
	var match []FunctionJSON
	for _, f := range fs {
		if (kind == "" || f.Kind == kind) && strings.Contains(strings.ToLower(f.Name), search) {
			match = append(match, functionJSON(f))
		}
	}
	total := len(match)
	start := min(page*limit, total)
	data := match[start:min(start+limit, total)]
	if data == nil {
		data = []FunctionJSON{}
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": data,
		"pagination": map[string]int{"total": total, "page": page, "limit": limit}})
	return nil
}

// findFunction finds a function by name, of a type when given; the same
// name for several types without one is ambiguous_function (409).
func (s *Service) findFunction(r *http.Request, p *httpapi.Principal, kind Kind) (*Function, error) {
	key, err := s.integrationOf(r, p)
	if err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	fs, err := s.st.ListFunctions(r.Context(), p.EnvironmentID, key)
	if err != nil {
		return nil, err
	}
	var found []*Function
	for _, f := range fs {
		if f.Name == name && (kind == "" || f.Kind == kind) {
			found = append(found, f)
		}
	}
	switch len(found) {
	case 0:
		return nil, store.NotFound("not_found", "No function %q is deployed to integration %q.", name, key)
	case 1:
		return found[0], nil
	}
	matches := make([]map[string]string, len(found))
	for i, f := range found {
		matches[i] = map[string]string{"type": string(f.Kind), "name": f.Name}
	}
	e := store.Errorf(store.ErrConflict, "ambiguous_function", "Several functions are named %q: give a type.", name)
	e.Payload = map[string]any{"matches": matches}
	return nil, e
}

func (s *Service) getFunctionHTTP(code bool) httpapi.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
		if err := onlyQuery(r, "type"); err != nil {
			return err
		}
		kind, err := kindQuery(r, false, KindSync, KindAction, KindOnEvent)
		if err != nil {
			return err
		}
		f, err := s.findFunction(r, p, kind)
		if err != nil {
			return err
		}
		if !code {
			httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": functionJSON(f)})
			return nil
		}
		httpapi.WriteJSON(w, http.StatusOK, map[string]any{"type": f.Kind, "code": functionCode(f)})
		return nil
	}
}

// functionCode is what GET .../code answers: the source the deployed code
// was built from (the TypeScript entry file of a function deployed with
// the nango CLI, which nango pull writes to <integration>/<type>s/<name>.ts),
// else the deployed code, or for a function registered in Go (whose code
// is compiled into the host) its source label and JSON Schema.
func functionCode(f *Function) string {
	if len(f.SourceCode) > 0 {
		return string(f.SourceCode)
	}
	if len(f.Code) > 0 {
		return string(f.Code)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// %s %q of integration %q is written in Go and compiled into the host.\n", f.Kind, f.Name, f.Integration)
	fmt.Fprintf(&b, "// source: %s\n", f.Source)
	if len(f.Definition.JSONSchema) > 0 {
		fmt.Fprintf(&b, "// json_schema: %s\n", f.Definition.JSONSchema)
	}
	return b.String()
}

func (s *Service) deleteFunctionHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	if err := onlyQuery(r, "type"); err != nil {
		return err
	}
	kind, err := kindQuery(r, true, KindSync, KindAction)
	if err != nil {
		return err
	}
	f, err := s.findFunction(r, p, kind)
	if err != nil {
		return err
	}
	if f.Runtime == GoRuntime {
		return store.Errorf(store.ErrConflict, "function_managed_by_deploy",
			"The %s %q is registered in Go by the host: remove it from the host's code.", f.Kind, f.Name)
	}
	if err := s.st.DeleteFunction(r.Context(), p.EnvironmentID, f.Integration, f.Kind, f.Name); err != nil {
		return err
	}
	s.forgetFunction(p.EnvironmentID, f.Integration, f.Kind, f.Name)
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": map[string]bool{"success": true}})
	return nil
}

// patchFunctionHTTP serves PATCH /integrations/{key}/functions/{name}
// (?type= sync, action or on-event, needed only when several functions
// have the name): {"enabled": bool} enables or disables the function (see
// SetEnabled) and answers it as GET does. Functions registered in Go are
// switched like deployed ones: the switch is stored, not their code.
func (s *Service) patchFunctionHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	if err := onlyQuery(r, "type"); err != nil {
		return err
	}
	kind, err := kindQuery(r, false, KindSync, KindAction, KindOnEvent)
	if err != nil {
		return err
	}
	raw, err := httpapi.ReadBody(r)
	if err != nil {
		return err
	}
	var in struct {
		Enabled *bool `json:"enabled"`
	}
	if err := httpapi.Unmarshal(raw, &in); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return httpapi.DecodeError(err)
	}
	var fe []store.FieldError
	for k := range keys {
		if k != "enabled" {
			fe = append(fe, store.FieldError{Code: "unrecognized_keys", Message: fmt.Sprintf("unknown field %q; only enabled can be changed", k),
				Path: []string{k}})
		}
	}
	slices.SortFunc(fe, func(a, b store.FieldError) int { return strings.Compare(a.Path[0], b.Path[0]) })
	if in.Enabled == nil {
		fe = append([]store.FieldError{{Code: "required", Message: "is required (true or false)", Path: []string{"enabled"}}}, fe...)
	}
	if len(fe) > 0 {
		return store.Invalid("invalid_body", "The request body is invalid.", fe...)
	}
	f, err := s.findFunction(r, p, kind)
	if err != nil {
		return err
	}
	if err := s.SetEnabled(r.Context(), p.EnvironmentID, f.Integration, f.Kind, f.Name, *in.Enabled); err != nil {
		return err
	}
	f, err = s.st.GetFunction(r.Context(), p.EnvironmentID, f.Integration, f.Kind, f.Name)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": functionJSON(f)})
	return nil
}

// descriptionField finds the "- field: text" lines of a description, the
// descriptions of an action's input fields in the openai format.
var descriptionField = regexp.MustCompile(`(?m)^\s*-\s*([A-Za-z0-9_]+)\s*:\s*(.+?)\s*$`)

func (s *Service) scriptsConfigHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	if err := onlyQuery(r, "format"); err != nil {
		return err
	}
	format := r.URL.Query().Get("format")
	if format == "" {
		format = "nango"
	}
	if format != "nango" && format != "openai" {
		return httpapi.InvalidQuery("format", "must be nango or openai")
	}
	ctx := r.Context()
	its, err := s.st.ListIntegrations(ctx, p.EnvironmentID)
	if err != nil {
		return err
	}
	type entry struct {
		ProviderConfigKey string           `json:"providerConfigKey"`
		Provider          string           `json:"provider"`
		Syncs             []map[string]any `json:"syncs"`
		Actions           []map[string]any `json:"actions"`
		OnEvents          []map[string]any `json:"on-events"`
	}
	nango := []entry{}
	openai := []map[string]any{}
	for _, it := range its {
		if err := s.deploy(ctx, p.EnvironmentID, it.UniqueKey); err != nil {
			return err
		}
		fs, err := s.st.ListFunctions(ctx, p.EnvironmentID, it.UniqueKey)
		if err != nil {
			return err
		}
		if len(fs) == 0 {
			continue
		}
		e := entry{ProviderConfigKey: it.UniqueKey, Provider: it.Provider, Syncs: []map[string]any{},
			Actions: []map[string]any{}, OnEvents: []map[string]any{}}
		for _, f := range fs {
			item := scriptConfig(f)
			switch f.Kind {
			case KindSync:
				e.Syncs = append(e.Syncs, item)
				openai = append(openai, map[string]any{"name": f.Name, "description": f.Definition.Description,
					"parameters": map[string]any{"type": "object", "properties": map[string]any{}, "required": []string{}}})
			case KindAction:
				e.Actions = append(e.Actions, item)
				openai = append(openai, map[string]any{"name": f.Name, "description": f.Definition.Description,
					"parameters": openaiParameters(f)})
			case KindOnEvent:
				e.OnEvents = append(e.OnEvents, item)
			}
		}
		nango = append(nango, e)
	}
	if format == "openai" {
		httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": openai})
		return nil
	}
	httpapi.WriteJSON(w, http.StatusOK, nango)
	return nil
}

// scriptConfig is a function as /scripts/config?format=nango lists it.
func scriptConfig(f *Function) map[string]any {
	d := f.Definition
	models := []map[string]any{}
	returns := []string{}
	for _, m := range d.Models {
		returns = append(returns, m.Name)
		models = append(models, map[string]any{"name": m.Name, "fields": modelFields(m.Schema)})
	}
	endpoints := []map[string]string{}
	for _, e := range d.Endpoints {
		ep := map[string]string{"method": e.Method, "path": e.Path}
		if e.Group != "" {
			ep["group"] = e.Group
		}
		endpoints = append(endpoints, ep)
	}
	scopes := d.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	item := map[string]any{
		"id": f.ID, "name": f.Name, "type": f.Kind, "returns": returns, "description": d.Description,
		"attributes": orEmpty(d.Attributes), "scopes": scopes, "version": f.Version, "source": f.Source,
		"endpoints": endpoints, "input": nilIfEmpty(d.Input), "enabled": f.Enabled, "last_deployed": f.UpdatedAt,
		"webhookSubscriptions": orEmptyList(d.WebhookSubscriptions), "json_schema": rawOrNull(d.JSONSchema),
		"sdk_version": nilIfEmpty(f.SDKVersion), "models": models, "features": orEmptyList(d.Features),
		"is_public": false, "pre_built": false, "nango_yaml_version": "v2",
	}
	if f.Kind == KindSync {
		item["sync_type"] = d.SyncType
		item["auto_start"] = d.AutoStart
		item["runs"] = d.Runs
		item["track_deletes"] = d.TrackDeletes
	}
	if f.Kind == KindOnEvent {
		item["event"] = d.Event
	}
	return item
}

// modelFields lists the properties of a model's schema as {name, type}.
func modelFields(schema json.RawMessage) []map[string]any {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	out := []map[string]any{}
	if json.Unmarshal(schema, &s) != nil {
		return out
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		t := s.Properties[n].Type
		if t == nil {
			t = "any"
		}
		out = append(out, map[string]any{"name": n, "type": t})
	}
	return out
}

// openaiParameters is an action's input schema in the openai format, with
// the field descriptions its description gives as "- field: text" lines.
func openaiParameters(f *Function) map[string]any {
	params := map[string]any{"type": "object", "properties": map[string]any{}, "required": []string{}}
	var input json.RawMessage
	for _, m := range modelsOfSchema(f.Definition.JSONSchema) {
		if m.Name == f.Definition.Input {
			input = m.Schema
		}
	}
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if input == nil || json.Unmarshal(input, &s) != nil {
		return params
	}
	desc := map[string]string{}
	for _, m := range descriptionField.FindAllStringSubmatch(f.Definition.Description, -1) {
		desc[m[1]] = m[2]
	}
	props := map[string]any{}
	for n, p := range s.Properties {
		if d, ok := desc[n]; ok {
			p["description"] = d
		}
		props[n] = p
	}
	params["properties"] = props
	if s.Required != nil {
		params["required"] = s.Required
	}
	return params
}

// modelsOfSchema returns the definitions of a function's JSON Schema
// document.
func modelsOfSchema(doc json.RawMessage) []Model {
	var d struct {
		Defs        map[string]json.RawMessage `json:"$defs"`
		Definitions map[string]json.RawMessage `json:"definitions"`
	}
	if json.Unmarshal(doc, &d) != nil {
		return nil
	}
	var out []Model
	for n, s := range d.Defs {
		out = append(out, Model{Name: n, Schema: s})
	}
	for n, s := range d.Definitions {
		out = append(out, Model{Name: n, Schema: s})
	}
	return out
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func orEmptyList(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func rawOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// Template is a function a host offers for a provider
// (GET /providers/{provider}/templates): its type, name, description,
// models and JSON Schema.
type Template struct {
	Type        Kind            `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Returns     []string        `json:"returns"`
	JSONSchema  json.RawMessage `json:"json_schema"`
}

// AddTemplates lists functions as templates of a provider. Each of fns is
// an Action or a Sync (or a pointer to one), described as Register would.
func (s *Service) AddTemplates(provider string, fns ...any) error {
	ts := make([]Template, 0, len(fns))
	for _, f := range fns {
		r, err := compile(f)
		if err != nil {
			return err
		}
		j := functionJSON(&r.fn)
		ts = append(ts, Template{Type: r.fn.Kind, Name: r.fn.Name, Description: r.fn.Definition.Description,
			Returns: orEmptyList(j.Returns), JSONSchema: rawOrNull(r.fn.Definition.JSONSchema)})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.templates == nil {
		s.templates = map[string][]Template{}
	}
	s.templates[provider] = append(s.templates[provider], ts...)
	return nil
}

func (s *Service) templatesHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	if err := onlyQuery(r); err != nil {
		return err
	}
	name := r.PathValue("provider")
	if s.cfg.Catalog != nil {
		if _, ok := s.cfg.Catalog.Get(name); !ok {
			return store.NotFound("not_found", "The provider %q is not in the catalogue.", name)
		}
	}
	s.mu.RLock()
	ts := slices.Clone(s.templates[name])
	s.mu.RUnlock()
	if ts == nil {
		ts = []Template{}
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"data": ts})
	return nil
}

// triggerBody is the body of POST /action/trigger.
type triggerBody struct {
	ActionName string          `json:"action_name"`
	Input      json.RawMessage `json:"input"`
}

func (s *Service) triggerActionHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	if err := onlyQuery(r); err != nil {
		return err
	}
	key := strings.TrimSpace(r.Header.Get("Provider-Config-Key"))
	conn := strings.TrimSpace(r.Header.Get("Connection-Id"))
	var fe []store.FieldError
	if key == "" {
		fe = append(fe, store.FieldError{Code: "required", Message: "is required", Path: []string{"provider-config-key"}})
	}
	if conn == "" {
		fe = append(fe, store.FieldError{Code: "required", Message: "is required", Path: []string{"connection-id"}})
	}
	async := false
	switch v := strings.ToLower(strings.TrimSpace(r.Header.Get("X-Async"))); v {
	case "", "false":
	case "true":
		async = true
	default:
		fe = append(fe, store.FieldError{Code: "invalid_type", Message: "must be true or false", Path: []string{"x-async"}})
	}
	retries := 0
	for _, h := range []string{"X-Max-Retries", "Retries"} {
		if v := strings.TrimSpace(r.Header.Get(h)); v != "" {
			n, ok := parseSmallInt(v)
			if !ok || n < 0 || n > MaxActionRetries {
				fe = append(fe, store.FieldError{Code: "invalid_value", Message: fmt.Sprintf("must be an integer from 0 to %d", MaxActionRetries),
					Path: []string{strings.ToLower(h)}})
				continue
			}
			retries = n
		}
	}
	if len(fe) > 0 {
		return store.Invalid("invalid_headers", "The headers are invalid.", fe...)
	}
	var body triggerBody
	if err := httpapi.Decode(r, &body); err != nil {
		return err
	}
	if body.ActionName == "" {
		return httpapi.InvalidField("is required", "action_name")
	}
	call := ActionCall{EnvironmentID: p.EnvironmentID, Integration: key, ConnectionID: conn, Action: body.ActionName, Input: body.Input}
	if async {
		h, err := s.TriggerActionAsync(r.Context(), call, retries)
		if err != nil {
			return err
		}
		w.Header().Set("Location", h.StatusURL)
		httpapi.WriteJSON(w, http.StatusAccepted, h)
		return nil
	}
	out, err := s.RunAction(r.Context(), call)
	var re *RunError
	if errors.As(err, &re) {
		httpapi.WriteJSON(w, re.Failure.Status, re.Failure.Body)
		return nil
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	return nil
}

func parseSmallInt(v string) (int, bool) {
	if len(v) == 0 || len(v) > 3 {
		return 0, false
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func (s *Service) actionResultHTTP(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
	if err := onlyQuery(r); err != nil {
		return err
	}
	id := r.PathValue("id")
	if !uuidPattern.MatchString(id) {
		return store.Invalid("invalid_uri_params", "The path is invalid.", store.FieldError{Code: "invalid_string",
			Message: "must be a UUID", Path: []string{"id"}})
	}
	out, failure, err := s.ActionResult(r.Context(), p.EnvironmentID, strings.ToLower(id))
	if err != nil {
		return err
	}
	if failure != nil {
		httpapi.WriteJSON(w, failure.Status, failure.Body)
		return nil
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	return nil
}
