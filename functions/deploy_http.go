package functions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/embedauth/connect/environments"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

// The routes the nango CLI deploys with (`nango deploy`), answered as
// Nango answers them: its "legacy" functions (createSync, createAction,
// createOnEvent) go to POST /sync/deploy/confirmation and POST
// /sync/deploy; a project without any goes to the "functions" routes POST
// /functions/deployments/bundle/preview and .../bundle, which this server
// answers only to remove functions. The CLI checks no status, only whether
// the body has an "error"; errors are {"error":{"code","message",
// "errors"}} with a 4xx.
//
// Bodies are read as the CLI 0.71.10 sends them, and as older CLIs (up to
// 0.69.x, nango.yaml projects) did: singleDeployMode instead of
// deployMode, the models' schemas in one top-level jsonSchema, endpoints
// as {"GET": "/path"}. Every field is checked. Fields this server does not
// know are ignored, at every level, so that a newer CLI that adds one
// still deploys; a known field of the wrong type is refused.

// MaxDeployBody is the largest body of the deploy routes: 32 MiB. The
// CLI's body for three functions is about 25 KB; each function's bundle
// carries an inline source map.
const MaxDeployBody = 32 << 20

// MaxTelemetryBody is the largest body POST /cli/telemetry reads.
const MaxTelemetryBody = 64 << 10

// MinCLIVersion is the oldest nango CLI the deploy routes accept (by its
// User-Agent, nango-cli/<version>), as Nango: older ones are refused with
// invalid_cli_version.
const MinCLIVersion = "0.39.25"

// deployRoutes registers the routes of the nango CLI's deployments.
func (s *Service) deployRoutes(rt *httpapi.Router) {
	scope := environments.ScopeEnvironmentDeploy
	for _, r := range []httpapi.Route{
		{Pattern: "POST /sync/deploy/confirmation", Scope: scope, MaxBody: MaxDeployBody, Handler: s.deployHTTP(true)},
		{Pattern: "POST /sync/deploy", Scope: scope, MaxBody: MaxDeployBody, Handler: s.deployHTTP(false)},
		{Pattern: "POST /functions/deployments/bundle/preview", Scope: scope, MaxBody: MaxDeployBody, Handler: s.bundleHTTP(true)},
		{Pattern: "POST /functions/deployments/bundle", Scope: scope, MaxBody: MaxDeployBody, Handler: s.bundleHTTP(false)},
	} {
		rt.Handle(r)
	}
	// The CLI's telemetry: sent without a key, answered 204 and ignored.
	rt.Mux.Handle("POST /cli/telemetry", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, MaxTelemetryBody)
		if _, err := httpapi.ReadBody(r); err != nil {
			httpapi.WriteError(w, r, nil, httpapi.StyleStandard, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
}

var cliVersionPattern = regexp.MustCompile(`nango-cli/([0-9]+(?:\.[0-9]+)*)`)

// checkCLIVersion refuses a nango CLI older than MinCLIVersion. A request
// without the CLI's User-Agent is not checked.
func checkCLIVersion(r *http.Request) error {
	m := cliVersionPattern.FindStringSubmatch(r.UserAgent())
	if m == nil || !versionLess(m[1], MinCLIVersion) {
		return nil
	}
	return store.Invalid("invalid_cli_version", fmt.Sprintf(
		"The nango CLI %s is too old for this server: use %s or later (npm install nango@latest).", m[1], MinCLIVersion))
}

// readCLIBody reads the body of a deploy route, after checking that the
// request has no query and does not come from a CLI that is too old.
func readCLIBody(r *http.Request) ([]byte, error) {
	if err := onlyQuery(r); err != nil {
		return nil, err
	}
	if err := checkCLIVersion(r); err != nil {
		return nil, err
	}
	return httpapi.ReadBody(r)
}

// versionLess compares dotted numbers.
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// hasRuntime reports whether the Service runs functions of a runtime.
func (s *Service) hasRuntime(name string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.runtimes[name] != nil
}

func errNoJavaScript() error {
	return httpapi.WithStatus(http.StatusNotImplemented, store.Errorf(store.ErrInvalid, "javascript_runtime_unavailable",
		"This server has no JavaScript runtime: functions deployed with the nango CLI cannot run here."))
}

// deployItem is a function in a confirmation's lists (Nango's SlimSync,
// SlimAction and on-event items).
type deployItem struct {
	Name              string `json:"name"`
	ProviderConfigKey string `json:"providerConfigKey"`
	Connections       *int   `json:"connections,omitempty"`
	AutoStart         *bool  `json:"auto_start,omitempty"`
	Event             Event  `json:"event,omitempty"`
}

// deployConfirmation is the answer of POST /sync/deploy/confirmation
// (Nango's ScriptDifferences): every list, always.
type deployConfirmation struct {
	NewSyncs              []deployItem `json:"newSyncs"`
	UpdatedSyncs          []deployItem `json:"updatedSyncs"`
	DeletedSyncs          []deployItem `json:"deletedSyncs"`
	NewActions            []deployItem `json:"newActions"`
	UpdatedActions        []deployItem `json:"updatedActions"`
	DeletedActions        []deployItem `json:"deletedActions"`
	NewOnEventScripts     []deployItem `json:"newOnEventScripts"`
	UpdatedOnEventScripts []deployItem `json:"updatedOnEventScripts"`
	DeletedOnEventScripts []deployItem `json:"deletedOnEventScripts"`
	DeletedModels         []string     `json:"deletedModels"`
}

// deployResult is an element of the answer of POST /sync/deploy (Nango's
// SyncDeploymentResult; sync_name for the CLIs before 0.70).
type deployResult struct {
	Name              string   `json:"name"`
	SyncName          string   `json:"sync_name"`
	Version           string   `json:"version"`
	ProviderConfigKey string   `json:"providerConfigKey"`
	Type              Kind     `json:"type"`
	LastDeployed      string   `json:"last_deployed"`
	Input             *string  `json:"input"`
	Models            []string `json:"models"`
	ID                int64    `json:"id"`
	Runs              *string  `json:"runs"`
}

func (s *Service) deployHTTP(confirm bool) httpapi.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
		b, err := readCLIBody(r)
		if err != nil {
			return err
		}
		body, err := decodeDeployBody(b)
		if err != nil {
			return err
		}
		if len(body.fns) > 0 && !s.hasRuntime(JavaScriptRuntime) {
			return errNoJavaScript()
		}
		d := &Deployment{EnvironmentID: p.EnvironmentID, Functions: body.fns, Runtime: JavaScriptRuntime,
			Reconcile: body.mode != deployModeSingle}
		if body.mode == deployModeIntegration {
			d.Integrations = append([]string{}, body.integrations...)
		}
		ctx := r.Context()
		if confirm {
			// The confirmation says what the deployment that follows it
			// (with reconcile) will delete.
			ch, err := s.PlanDeployment(ctx, d)
			if err != nil {
				return err
			}
			out, err := s.confirmation(r, p.EnvironmentID, ch)
			if err != nil {
				return err
			}
			httpapi.WriteJSON(w, http.StatusOK, out)
			return nil
		}
		d.Reconcile = d.Reconcile && body.reconcile
		if _, err := s.DeployFunctions(ctx, d); err != nil {
			return err
		}
		s.logger.InfoContext(ctx, "functions: deployed with the nango CLI", "environment", p.EnvironmentID,
			"mode", body.mode, "functions", len(body.fns), "reconcile", d.Reconcile)
		out := make([]deployResult, 0, len(body.fns))
		for _, f := range body.fns {
			res := deployResult{Name: f.Name, SyncName: f.Name, Version: f.Version, ProviderConfigKey: f.Integration, Type: f.Kind,
				LastDeployed: httpapi.Time(f.DeployedAt), Models: []string{}, ID: f.ID}
			if f.Definition.Input != "" {
				in := f.Definition.Input
				res.Input = &in
			}
			for _, m := range f.Definition.Models {
				res.Models = append(res.Models, m.Name)
			}
			if f.Kind == KindSync {
				runs := f.Definition.Runs
				res.Runs = &runs
			}
			out = append(out, res)
		}
		httpapi.WriteJSON(w, http.StatusOK, out)
		return nil
	}
}

// confirmation builds the answer of a confirmation, with the number of
// connections of each sync's integration.
func (s *Service) confirmation(r *http.Request, env int64, ch *DeployChanges) (*deployConfirmation, error) {
	out := &deployConfirmation{NewSyncs: []deployItem{}, UpdatedSyncs: []deployItem{}, DeletedSyncs: []deployItem{},
		NewActions: []deployItem{}, UpdatedActions: []deployItem{}, DeletedActions: []deployItem{},
		NewOnEventScripts: []deployItem{}, UpdatedOnEventScripts: []deployItem{}, DeletedOnEventScripts: []deployItem{},
		DeletedModels: []string{}}
	counts := map[string]int{}
	add := func(f *Function, syncs, actions, onEvents *[]deployItem) error {
		item := deployItem{Name: f.Name, ProviderConfigKey: f.Integration}
		switch f.Kind {
		case KindSync:
			n, ok := counts[f.Integration]
			if !ok {
				var err error
				if n, err = s.st.CountConnections(r.Context(), env, f.Integration); err != nil {
					return err
				}
				counts[f.Integration] = n
			}
			auto := f.Definition.AutoStart
			item.Connections, item.AutoStart = &n, &auto
			*syncs = append(*syncs, item)
		case KindAction:
			*actions = append(*actions, item)
		case KindOnEvent:
			item.Event = f.Definition.Event
			*onEvents = append(*onEvents, item)
		}
		return nil
	}
	for _, l := range []struct {
		fns                      []*Function
		syncs, actions, onEvents *[]deployItem
	}{
		{ch.New, &out.NewSyncs, &out.NewActions, &out.NewOnEventScripts},
		{ch.Updated, &out.UpdatedSyncs, &out.UpdatedActions, &out.UpdatedOnEventScripts},
		{ch.Deleted, &out.DeletedSyncs, &out.DeletedActions, &out.DeletedOnEventScripts},
	} {
		for _, f := range l.fns {
			if err := add(f, l.syncs, l.actions, l.onEvents); err != nil {
				return nil, err
			}
		}
	}
	for _, m := range ch.DeletedModels {
		if !slices.Contains(out.DeletedModels, m.Model) {
			out.DeletedModels = append(out.DeletedModels, m.Model)
		}
	}
	return out, nil
}

// bundleRef names a function in the answers of the bundle routes.
type bundleRef struct {
	IntegrationID string `json:"integrationId"`
	Name          string `json:"name"`
}

func (s *Service) bundleHTTP(preview bool) httpapi.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p *httpapi.Principal) error {
		b, err := readCLIBody(r)
		if err != nil {
			return err
		}
		scope, err := decodeBundleBody(b)
		if err != nil {
			return err
		}
		d := &Deployment{EnvironmentID: p.EnvironmentID, Runtime: JavaScriptRuntime, Reconcile: true, Integrations: scope}
		var ch *DeployChanges
		if preview {
			ch, err = s.PlanDeployment(r.Context(), d)
		} else {
			ch, err = s.DeployFunctions(r.Context(), d)
		}
		if err != nil {
			return err
		}
		deleted := make([]bundleRef, 0, len(ch.Deleted))
		for _, f := range ch.Deleted {
			deleted = append(deleted, bundleRef{IntegrationID: f.Integration, Name: f.Name})
		}
		httpapi.WriteJSON(w, http.StatusOK, map[string][]bundleRef{"created": {}, "updated": {}, "unchanged": {}, "deleted": deleted})
		return nil
	}
}

// The deploy modes of the CLI.
const (
	deployModeAll         = "all"
	deployModeIntegration = "integration"
	deployModeSingle      = "single"
)

// deployBody is a decoded, checked body of the deploy routes.
type deployBody struct {
	mode      string
	reconcile bool
	// fns are the functions, in the body's order (flows, then on-event
	// scripts), with Runtime JavaScriptRuntime.
	fns []*Function
	// integrations are the integrations the body names, in order.
	integrations []string
}

// maxFieldErrors bounds the problems one answer lists.
const maxFieldErrors = 100

// bodyReader decodes the members of a JSON body one by one, collecting
// every problem with its path.
type bodyReader struct {
	errs []store.FieldError
}

type jsonObject map[string]json.RawMessage

// where writes a path as the CLI's users read it: flowConfigs[0].runs.
func where(path []string) string {
	var b strings.Builder
	for _, p := range path {
		if _, err := strconv.Atoi(p); err == nil {
			b.WriteString("[" + p + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

func (br *bodyReader) fail(code, message string, path ...string) {
	if len(br.errs) < maxFieldErrors {
		br.errs = append(br.errs, store.FieldError{Code: code, Message: where(path) + ": " + message, Path: slices.Clone(path)})
	}
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

// object reads a JSON object; nil, after a problem, when raw is another
// value.
func (br *bodyReader) object(raw json.RawMessage, path ...string) jsonObject {
	var o jsonObject
	if !isObject(raw) || json.Unmarshal(raw, &o) != nil {
		br.fail("invalid_type", "must be an object", path...)
		return nil
	}
	return o
}

// member returns a member of o that is neither absent nor null, with its
// path; required ones missing are a problem.
func (br *bodyReader) member(o jsonObject, key string, required bool, path []string) (json.RawMessage, []string, bool) {
	p := append(slices.Clone(path), key)
	raw, ok := o[key]
	if !ok || isNull(raw) {
		if required {
			br.fail("required", "is required", p...)
		}
		return nil, p, false
	}
	return raw, p, true
}

func (br *bodyReader) str(o jsonObject, key string, required bool, path ...string) (string, bool) {
	raw, p, ok := br.member(o, key, required, path)
	if !ok {
		return "", false
	}
	var v string
	if json.Unmarshal(raw, &v) != nil {
		br.fail("invalid_type", "must be a string", p...)
		return "", false
	}
	return v, true
}

func (br *bodyReader) boolean(o jsonObject, key string, required bool, path ...string) (bool, bool) {
	raw, p, ok := br.member(o, key, required, path)
	if !ok {
		return false, false
	}
	var v bool
	if json.Unmarshal(raw, &v) != nil {
		br.fail("invalid_type", "must be true or false", p...)
		return false, false
	}
	return v, true
}

func (br *bodyReader) array(o jsonObject, key string, required bool, path ...string) ([]json.RawMessage, bool) {
	raw, p, ok := br.member(o, key, required, path)
	if !ok {
		return nil, false
	}
	var v []json.RawMessage
	if t := bytes.TrimSpace(raw); t[0] != '[' || json.Unmarshal(raw, &v) != nil {
		br.fail("invalid_type", "must be an array", p...)
		return nil, false
	}
	return v, true
}

// strings reads an array of strings; each must match check when given.
func (br *bodyReader) strings(o jsonObject, key string, check func(string) string, path ...string) []string {
	items, ok := br.array(o, key, false, path...)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(items))
	for i, raw := range items {
		p := append(slices.Clone(path), key, strconv.Itoa(i))
		var v string
		if json.Unmarshal(raw, &v) != nil {
			br.fail("invalid_type", "must be a string", p...)
			continue
		}
		if check != nil {
			if msg := check(v); msg != "" {
				br.fail("invalid_value", msg, p...)
				continue
			}
		}
		out = append(out, v)
	}
	return out
}

// label checks short text: 1 to max characters, without control
// characters.
func label(max int) func(string) string {
	return func(v string) string {
		if v == "" || len(v) > max {
			return fmt.Sprintf("must be 1 to %d characters", max)
		}
		if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return "must not hold control characters"
		}
		return ""
	}
}

var (
	sdkVersionPattern = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$`)
	sourcePattern     = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)
)

// invalidBody is the error of a body with problems.
func (br *bodyReader) invalidBody() error {
	if len(br.errs) == 0 {
		return nil
	}
	msg := "The deployment is invalid: " + br.errs[0].Message
	if n := len(br.errs) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more problem%s)", n, map[bool]string{true: "s"}[n > 1])
	}
	return store.Invalid("invalid_body", msg, br.errs...)
}

// decodeDeployBody reads and checks the body of POST /sync/deploy and
// /sync/deploy/confirmation.
func decodeDeployBody(b []byte) (*deployBody, error) {
	var top jsonObject
	if err := httpapi.Unmarshal(b, &top); err != nil {
		return nil, err
	}
	br := &bodyReader{}
	out := &deployBody{mode: deployModeAll}
	if mode, ok := br.str(top, "deployMode", false); ok {
		switch mode {
		case deployModeAll, deployModeIntegration, deployModeSingle:
			out.mode = mode
		default:
			br.fail("invalid_value", "must be all, integration or single", "deployMode")
		}
	} else if single, ok := br.boolean(top, "singleDeployMode", false); ok && single {
		out.mode = deployModeSingle // CLIs before 0.70
	}
	out.reconcile, _ = br.boolean(top, "reconcile", true)
	br.boolean(top, "debug", false)
	br.str(top, "nangoYamlBody", false)
	sdk, _ := br.str(top, "sdkVersion", false)
	if sdk != "" && !sdkVersionPattern.MatchString(sdk) {
		br.fail("invalid_value", "must be a version such as 0.71.10-zero", "sdkVersion")
	}
	source := "repo"
	if v, ok := br.str(top, "source", false); ok {
		if !sourcePattern.MatchString(v) {
			br.fail("invalid_value", "must be 1 to 64 lower-case letters, digits, '-' or '_' (repo, standalone)", "source")
		} else {
			source = v
		}
	}
	// CLIs before 0.70 send every model's schema once, here.
	var shared json.RawMessage
	if raw, p, ok := br.member(top, "jsonSchema", false, nil); ok {
		if br.object(raw, p...) != nil {
			shared = raw
		}
	}
	seen := map[string]bool{}
	named := func(key string) {
		if key != "" && !seen[key] {
			seen[key] = true
			out.integrations = append(out.integrations, key)
		}
	}
	var locs [][]string // the path of each of out.fns
	flows, _ := br.array(top, "flowConfigs", true)
	for i, raw := range flows {
		loc := []string{"flowConfigs", strconv.Itoa(i)}
		if f := br.flow(raw, shared, loc...); f != nil {
			named(f.Integration)
			out.fns, locs = append(out.fns, f), append(locs, loc)
		}
	}
	groups, _ := br.array(top, "onEventScriptsByProvider", false)
	for i, raw := range groups {
		path := []string{"onEventScriptsByProvider", strconv.Itoa(i)}
		g := br.object(raw, path...)
		if g == nil {
			continue
		}
		key, _ := br.str(g, "providerConfigKey", true, path...)
		if msg := label(255)(key); key != "" && msg != "" {
			br.fail("invalid_value", msg, append(path, "providerConfigKey")...)
			key = ""
		}
		scripts, _ := br.array(g, "scripts", true, path...)
		for j, raw := range scripts {
			loc := append(slices.Clone(path), "scripts", strconv.Itoa(j))
			if f := br.onEvent(raw, key, loc...); f != nil && key != "" {
				named(key)
				out.fns, locs = append(out.fns, f), append(locs, loc)
			}
		}
	}
	for _, f := range out.fns {
		f.Runtime, f.Source, f.SDKVersion = JavaScriptRuntime, source, sdk
	}
	// What only the Service checks: frequencies, models, names given twice.
	ids := map[fnCacheKey]string{}
	for i, f := range out.fns {
		at, loc := ids[identityOf(f)], locs[i]
		if at != "" {
			br.fail("duplicate_function", fmt.Sprintf("the %s %q of integration %q is also at %s", f.Kind, f.Name, f.Integration, at), loc...)
			continue
		}
		ids[identityOf(f)] = where(loc)
		if err := checkDeployable(f); err != nil {
			code := store.CodeOf(err)
			if code == "" {
				code = "invalid_value"
			}
			br.fail(code, strings.TrimPrefix(err.Error(), "functions: Deploy: "), loc...)
		}
	}
	if err := br.invalidBody(); err != nil {
		return nil, err
	}
	return out, nil
}

// fileBody reads a function's fileBody: the CommonJS bundle (js) and the
// TypeScript entry file (ts).
func (br *bodyReader) fileBody(o jsonObject, path []string) (js, ts string, ok bool) {
	raw, p, present := br.member(o, "fileBody", true, path)
	if !present {
		return "", "", false
	}
	fb := br.object(raw, p...)
	if fb == nil {
		return "", "", false
	}
	js, ok = br.str(fb, "js", true, p...)
	if ok && strings.TrimSpace(js) == "" {
		br.fail("invalid_value", "must not be empty", append(p, "js")...)
		ok = false
	}
	ts, _ = br.str(fb, "ts", false, p...)
	return js, ts, ok
}

// version reads an optional version: up to 255 characters.
func (br *bodyReader) version(o jsonObject, path []string) string {
	v, _ := br.str(o, "version", false, path...)
	if v != "" {
		if msg := label(255)(v); msg != "" {
			br.fail("invalid_value", msg, append(path, "version")...)
			return ""
		}
	}
	return v
}

// flow reads a flow config: a sync or an action.
func (br *bodyReader) flow(raw json.RawMessage, shared json.RawMessage, path ...string) *Function {
	o := br.object(raw, path...)
	if o == nil {
		return nil
	}
	before := len(br.errs)
	f := &Function{}
	typ, _ := br.str(o, "type", true, path...)
	switch typ {
	case "":
	case string(KindSync), string(KindAction):
		f.Kind = Kind(typ)
	default:
		br.fail("invalid_value", "must be sync or action", append(path, "type")...)
	}
	f.Name, _ = br.str(o, "syncName", true, path...)
	if f.Name != "" && !namePattern.MatchString(f.Name) {
		br.fail("invalid_value", "must be 1 to 255 letters, digits, '-' or '_'", append(path, "syncName")...)
	}
	f.Integration, _ = br.str(o, "providerConfigKey", true, path...)
	if msg := label(255)(f.Integration); f.Integration != "" && msg != "" {
		br.fail("invalid_value", msg, append(path, "providerConfigKey")...)
	}
	f.Version = br.version(o, path)
	d := &f.Definition
	modelNames := br.strings(o, "models", func(v string) string {
		if !ValidModelName(v) {
			return "must be a model name: a capital letter, then letters, digits or '_'"
		}
		return ""
	}, path...)
	if runs, ok := br.str(o, "runs", f.Kind == KindSync, path...); ok && f.Kind == KindSync {
		if _, err := ParseFrequency(runs); err != nil {
			code, msg := CodeInvalidFrequency, err.Error()
			if fe, ok := err.(*FrequencyError); ok {
				code, msg = fe.Code, fe.Message
			}
			br.fail(code, msg, append(path, "runs")...)
		}
		d.Runs = runs
	}
	d.AutoStart = true // Nango's default
	if v, ok := br.boolean(o, "auto_start", false, path...); ok {
		d.AutoStart = v
	}
	d.TrackDeletes, _ = br.boolean(o, "track_deletes", false, path...)
	if v, ok := br.str(o, "sync_type", false, path...); ok {
		switch strings.ToLower(v) {
		case "full", "incremental":
			d.SyncType = strings.ToLower(v)
		default:
			br.fail("invalid_value", "must be full or incremental", append(path, "sync_type")...)
		}
	}
	if f.Kind == KindSync && d.SyncType == "" {
		d.SyncType = "full"
	}
	if raw, p, ok := br.member(o, "attributes", false, path); ok {
		if br.object(raw, p...) != nil {
			_ = json.Unmarshal(raw, &d.Attributes)
		}
	}
	if raw, p, ok := br.member(o, "metadata", false, path); ok {
		if m := br.object(raw, p...); m != nil {
			d.Description, _ = br.str(m, "description", false, p...)
			d.Scopes = br.strings(m, "scopes", label(255), p...)
		}
	}
	if raw, p, ok := br.member(o, "input", false, path); ok {
		var in string
		var legacy struct {
			Name string `json:"name"`
		}
		switch {
		case json.Unmarshal(raw, &in) == nil:
		case isObject(raw) && json.Unmarshal(raw, &legacy) == nil && legacy.Name != "":
			in = legacy.Name // a model, from CLIs before 0.58
		default:
			br.fail("invalid_type", "must be a model name", p...)
		}
		if in != "" && !ValidModelName(in) {
			br.fail("invalid_value", "must be a model name: a capital letter, then letters, digits or '_'", p...)
		}
		d.Input = in
	}
	js, ts, _ := br.fileBody(o, path)
	f.Code, f.SourceCode = []byte(js), []byte(ts)
	d.Endpoints = br.endpoints(o, path)
	d.WebhookSubscriptions = br.strings(o, "webhookSubscriptions", label(255), path...)
	d.Features = br.strings(o, "features", label(255), path...)
	doc := shared
	if raw, p, ok := br.member(o, "models_json_schema", false, path); ok {
		if br.object(raw, p...) != nil {
			doc = raw
		}
	}
	if len(doc) > 0 {
		d.JSONSchema = doc
	}
	defs := map[string]json.RawMessage{}
	for _, m := range modelsOfSchema(doc) {
		defs[m.Name] = m.Schema
	}
	for i, name := range modelNames {
		schema, ok := defs[name]
		if !ok && f.Kind == KindSync {
			br.fail("invalid_model", fmt.Sprintf("the model %q has no schema in models_json_schema", name),
				append(path, "models", strconv.Itoa(i))...)
		}
		d.Models = append(d.Models, Model{Name: name, Schema: schema})
	}
	if f.Kind == KindSync && len(modelNames) == 0 && len(br.errs) == before {
		br.fail("required", "a sync needs at least one model", append(path, "models")...)
	}
	if len(br.errs) > before {
		return nil
	}
	return f
}

// endpoints reads a flow's endpoints: {method, path, group} objects, or
// {"GET": "/path"} from CLIs before 0.58.
func (br *bodyReader) endpoints(o jsonObject, path []string) []Endpoint {
	items, ok := br.array(o, "endpoints", false, path...)
	if !ok {
		return nil
	}
	var out []Endpoint
	for i, raw := range items {
		p := append(slices.Clone(path), "endpoints", strconv.Itoa(i))
		e := br.object(raw, p...)
		if e == nil {
			continue
		}
		var ep Endpoint
		if _, ok := e["path"]; ok {
			ep.Method, _ = br.str(e, "method", false, p...)
			ep.Path, _ = br.str(e, "path", true, p...)
			ep.Group, _ = br.str(e, "group", false, p...)
		} else if len(e) == 1 {
			for k, v := range e {
				ep.Method = k
				if json.Unmarshal(v, &ep.Path) != nil {
					br.fail("invalid_type", "must be a path", append(p, k)...)
				}
			}
		}
		ep.Method = strings.ToUpper(ep.Method)
		switch ep.Method {
		case "GET", "POST", "PUT", "PATCH", "DELETE":
		default:
			br.fail("invalid_value", "the method must be GET, POST, PUT, PATCH or DELETE", append(p, "method")...)
			continue
		}
		if !strings.HasPrefix(ep.Path, "/") || label(1024)(ep.Path) != "" {
			br.fail("invalid_value", "the path must start with / and have at most 1024 characters", append(p, "path")...)
			continue
		}
		if ep.Group != "" && label(255)(ep.Group) != "" {
			br.fail("invalid_value", label(255)(ep.Group), append(p, "group")...)
			continue
		}
		out = append(out, ep)
	}
	return out
}

// onEvent reads an on-event script of an integration.
func (br *bodyReader) onEvent(raw json.RawMessage, integration string, path ...string) *Function {
	o := br.object(raw, path...)
	if o == nil {
		return nil
	}
	before := len(br.errs)
	f := &Function{Kind: KindOnEvent, Integration: integration}
	f.Name, _ = br.str(o, "name", true, path...)
	if f.Name != "" && !namePattern.MatchString(f.Name) {
		br.fail("invalid_value", "must be 1 to 255 letters, digits, '-' or '_'", append(path, "name")...)
	}
	ev, _ := br.str(o, "event", true, path...)
	switch Event(ev) {
	case "":
	case EventPostConnectionCreation, EventPreConnectionDeletion, EventValidateConnection:
		f.Definition.Event = Event(ev)
	default:
		br.fail("invalid_value", "must be post-connection-creation, pre-connection-deletion or validate-connection", append(path, "event")...)
	}
	f.Version = br.version(o, path)
	js, ts, _ := br.fileBody(o, path)
	f.Code, f.SourceCode = []byte(js), []byte(ts)
	if raw, p, ok := br.member(o, "metadata", false, path); ok {
		if m := br.object(raw, p...); m != nil {
			f.Definition.Description, _ = br.str(m, "description", false, p...)
		}
	}
	if len(br.errs) > before {
		return nil
	}
	return f
}

// decodeBundleBody reads the body of the bundle routes and returns the
// integrations it reconciles (nil for the whole environment). It refuses
// functions to create: this server cannot deploy createFunction
// functions yet.
func decodeBundleBody(b []byte) ([]string, error) {
	var top jsonObject
	if err := httpapi.Unmarshal(b, &top); err != nil {
		return nil, err
	}
	br := &bodyReader{}
	var scope []string
	if raw, p, ok := br.member(top, "reconciliationScope", true, nil); ok {
		if o := br.object(raw, p...); o != nil {
			switch kind, _ := br.str(o, "kind", true, p...); kind {
			case "":
			case "environment":
			case "integration":
				id, _ := br.str(o, "integrationId", true, p...)
				if msg := label(255)(id); id != "" && msg != "" {
					br.fail("invalid_value", msg, append(p, "integrationId")...)
				}
				scope = []string{id}
			default:
				br.fail("invalid_value", "must be environment or integration", append(p, "kind")...)
			}
		}
	}
	fns, _ := br.array(top, "functions", true)
	if err := br.invalidBody(); err != nil {
		return nil, err
	}
	if len(fns) > 0 {
		return nil, store.Invalid("functions_not_supported",
			"This server cannot deploy functions made with createFunction (nango/experimental) yet: deploy createSync, createAction and createOnEvent functions, or remove the createFunction ones.")
	}
	return scope, nil
}
