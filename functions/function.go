package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Action is an action written in Go: called with an input, it answers an
// output (POST /action/trigger, Service.TriggerAction). Build typed ones
// with NewAction.
type Action struct {
	// Integration is the unique key of the integration it is deployed to,
	// in every environment that has one. Required.
	Integration string
	// Name is unique among the integration's actions. Required: letters,
	// digits, '-' and '_', at most 255 characters.
	Name        string
	Description string
	// Version is the definition's version; empty lets the Store count.
	Version string
	// Source is a label of where the code lives (listed as the function's
	// source and returned as its "code"). Defaults to "go".
	Source string
	Scopes []string
	// Endpoint documents the action's endpoint (optional).
	Endpoint *Endpoint
	// Input and Output are the JSON Schemas of the input and output
	// (NewAction derives them from the Go types), named InputName and
	// OutputName in the function's json_schema.
	Input, Output         json.RawMessage
	InputName, OutputName string
	// Run runs the action. Its output is encoded as JSON.
	Run func(ctx context.Context, c *Context, input json.RawMessage) (any, error)
}

// NewAction returns an Action whose input is decoded into In and whose
// output is Out, with the JSON Schemas of both derived from the types. An
// input that does not fit In's schema is refused with invalid_action_input
// before the action is run, queued or logged (see Service.RunAction); one
// that still does not decode into In (a number out of In's range) is
// refused the same way, naming the JSON path, before fn runs.
func NewAction[In, Out any](integration, name string, fn func(ctx context.Context, c *Context, in In) (Out, error)) Action {
	in, out := reflect.TypeFor[In](), reflect.TypeFor[Out]()
	a := Action{
		Integration: integration,
		Name:        name,
		InputName:   "ActionInput_" + modelSuffix(integration, name),
		OutputName:  "ActionOutput_" + modelSuffix(integration, name),
	}
	a.Input, _ = schemaFor(in)
	a.Output, _ = schemaFor(out)
	a.Run = func(ctx context.Context, c *Context, raw json.RawMessage) (any, error) {
		var v In
		if len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, &InputError{Problems: []InputProblem{decodeProblem(err)}}
			}
		}
		return fn(ctx, c, v)
	}
	return a
}

// Sync is a sync written in Go: run on a schedule for every connection of
// its integration (and for each variant), it saves records of its Models
// through the SyncContext.
type Sync struct {
	// Integration, Name, Description, Version, Source and Scopes are as
	// for Action.
	Integration, Name, Description, Version, Source string
	Scopes                                          []string
	// Frequency is how often it runs, in the notation of ParseFrequency
	// ("every hour", "30m", "1d"); at least 30 seconds. Required.
	Frequency string
	// AutoStart schedules it for new connections (and for existing ones
	// when it is first registered); otherwise its schedules start paused
	// until POST /sync/start.
	AutoStart bool
	// TrackDeletes deletes, after each successful run, the records the run
	// did not save (for full syncs; see SyncContext.TrackDeletesStart for
	// finer control).
	TrackDeletes bool
	// Models are the record models it saves: names matching
	// ^[A-Z][A-Za-z0-9_]*$, each with a JSON Schema whose objects have an
	// id. At least one. ModelOf builds one from a Go type.
	Models []Model
	// Endpoints document the sync's endpoints, one per model (optional).
	Endpoints []Endpoint
	// WebhookSubscriptions are the provider webhook types that run
	// OnWebhook ("*" for all): a provider webhook routed to a connection
	// whose type (the provider's webhook_routing.type) is one of them
	// queues a webhook run (see Service.RunWebhookSyncs). Requires
	// OnWebhook.
	WebhookSubscriptions []string
	// Run runs the sync. Required.
	Run func(ctx context.Context, s *SyncContext) error
	// OnWebhook handles a provider webhook routed to the connection, of a
	// type WebhookSubscriptions holds: payload is the webhook's JSON body
	// (or one element of a body that is a JSON array). It runs in a run of
	// its own (trigger "webhook", type INCREMENTAL) on the base variant's
	// records, whether the schedule is paused or not; its saves, updates
	// and deletes are counted in that run's result and sync webhook
	// (syncType WEBHOOK). It may run while a scheduled run of the sync
	// runs, and cannot track deletes.
	OnWebhook func(ctx context.Context, s *SyncContext, payload json.RawMessage) error
}

// ModelOf returns the model of the Go type T under name, with the JSON
// Schema derived from T.
func ModelOf[T any](name string) Model {
	s, _ := schemaFor(reflect.TypeFor[T]())
	return Model{Name: name, Schema: s}
}

// OnEvent is a function run on a connection event: after a connection is
// created (post-connection-creation, as a durable job), before one is
// deleted (pre-connection-deletion: a failure is logged and the deletion
// proceeds), or to validate new credentials (validate-connection: an
// error refuses the connection with connection_validation_failed).
type OnEvent struct {
	Integration, Name, Description, Version, Source string
	Event                                           Event
	Run                                             func(ctx context.Context, c *Context) error
}

// schemaFor is the JSON Schema of a Go type, nil when it cannot be
// derived (a registration then has no schema for it).
func schemaFor(t reflect.Type) (json.RawMessage, error) { return SchemaOfType(t) }

// modelSuffix names the generated input and output models of an action:
// its name in UpperCamelCase ("create-issue" is CreateIssue), as model
// names allow.
func modelSuffix(integration, name string) string {
	var b strings.Builder
	up := true
	for _, r := range name {
		switch {
		case r == '-' || r == '_' || r == ' ':
			up = true
		case up:
			b.WriteRune(unicode.ToUpper(r))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "Action"
	}
	return b.String()
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,255}$`)

// checkName checks the integration key and name of a registration.
func checkName(kind Kind, integration, name string) error {
	if integration == "" {
		return fmt.Errorf("functions: %s %q: Integration is required", kind, name)
	}
	if !namePattern.MatchString(name) {
		return fmt.Errorf("functions: %s %q of %q: the name must be 1 to 255 letters, digits, '-' or '_'", kind, name, integration)
	}
	return nil
}

// registered is a function registered in Go: its definition and code.
type registered struct {
	fn      Function // Integration, Kind, Name, Runtime, Version, Source, Definition
	action  func(ctx context.Context, c *Context, input json.RawMessage) (any, error)
	sync    func(ctx context.Context, s *SyncContext) error
	webhook func(ctx context.Context, s *SyncContext, payload json.RawMessage) error
	onEvent func(ctx context.Context, c *Context) error
}

// GoRuntime is the Function.Runtime of functions registered in Go.
const GoRuntime = "go"

// compile checks a registration and builds its definition.
func compile(v any) (*registered, error) {
	switch f := v.(type) {
	case Action:
		return compileAction(&f)
	case *Action:
		return compileAction(f)
	case Sync:
		return compileSync(&f)
	case *Sync:
		return compileSync(f)
	case OnEvent:
		return compileOnEvent(&f)
	case *OnEvent:
		return compileOnEvent(f)
	default:
		return nil, fmt.Errorf("functions: cannot register a %T: want an Action, Sync or OnEvent", v)
	}
}

func base(kind Kind, integration, name, version, source string) Function {
	if source == "" {
		source = GoRuntime
	}
	return Function{Integration: integration, Kind: kind, Name: name, Runtime: GoRuntime, Version: version,
		Source: source, Enabled: true}
}

func compileAction(a *Action) (*registered, error) {
	if err := checkName(KindAction, a.Integration, a.Name); err != nil {
		return nil, err
	}
	if a.Run == nil {
		return nil, fmt.Errorf("functions: action %q of %q: Run is required", a.Name, a.Integration)
	}
	r := &registered{fn: base(KindAction, a.Integration, a.Name, a.Version, a.Source), action: a.Run}
	d := &r.fn.Definition
	d.Description, d.Scopes = a.Description, slices.Clone(a.Scopes)
	if a.Endpoint != nil {
		d.Endpoints = []Endpoint{*a.Endpoint}
	}
	var models []Model
	if len(a.Input) > 0 && a.InputName != "" {
		d.Input = a.InputName
		models = append(models, Model{Name: a.InputName, Schema: a.Input})
	}
	if len(a.Output) > 0 && a.OutputName != "" {
		d.Models = []Model{{Name: a.OutputName, Schema: a.Output}}
		models = append(models, d.Models[0])
	}
	doc, err := schemaDocument(models)
	if err != nil {
		return nil, fmt.Errorf("functions: action %q of %q: %w", a.Name, a.Integration, err)
	}
	d.JSONSchema = doc
	return r, nil
}

func compileSync(s *Sync) (*registered, error) {
	if err := checkName(KindSync, s.Integration, s.Name); err != nil {
		return nil, err
	}
	where := fmt.Sprintf("functions: sync %q of %q", s.Name, s.Integration)
	if s.Run == nil {
		return nil, errors.New(where + ": Run is required")
	}
	if len(s.WebhookSubscriptions) > 0 && s.OnWebhook == nil {
		return nil, errors.New(where + ": WebhookSubscriptions needs OnWebhook, which handles the webhooks")
	}
	if err := checkWebhookSubscriptions(s.WebhookSubscriptions); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	freq, err := ParseFrequency(s.Frequency)
	if err != nil {
		return nil, fmt.Errorf("%s: Frequency: %w", where, err)
	}
	if len(s.Models) == 0 {
		return nil, errors.New(where + ": at least one model is required")
	}
	seen := map[string]bool{}
	for _, m := range s.Models {
		if err := CheckSyncModel(m); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("%s: model %q given twice", where, m.Name)
		}
		seen[m.Name] = true
	}
	r := &registered{fn: base(KindSync, s.Integration, s.Name, s.Version, s.Source), sync: s.Run, webhook: s.OnWebhook}
	d := &r.fn.Definition
	d.Description, d.Scopes = s.Description, slices.Clone(s.Scopes)
	d.Runs, d.AutoStart, d.TrackDeletes = freq.String(), s.AutoStart, s.TrackDeletes
	d.SyncType = "full"
	d.Models = slices.Clone(s.Models)
	d.Endpoints = slices.Clone(s.Endpoints)
	d.WebhookSubscriptions = slices.Clone(s.WebhookSubscriptions)
	if d.JSONSchema, err = schemaDocument(s.Models); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return r, nil
}

func compileOnEvent(o *OnEvent) (*registered, error) {
	if err := checkName(KindOnEvent, o.Integration, o.Name); err != nil {
		return nil, err
	}
	switch o.Event {
	case EventPostConnectionCreation, EventPreConnectionDeletion, EventValidateConnection:
	default:
		return nil, fmt.Errorf("functions: on-event %q of %q: unknown Event %q", o.Name, o.Integration, o.Event)
	}
	if o.Run == nil {
		return nil, fmt.Errorf("functions: on-event %q of %q: Run is required", o.Name, o.Integration)
	}
	r := &registered{fn: base(KindOnEvent, o.Integration, o.Name, o.Version, o.Source), onEvent: o.Run}
	r.fn.Definition.Description, r.fn.Definition.Event = o.Description, o.Event
	return r, nil
}

// schemaDocument is one JSON Schema document whose definitions are the
// models (nil without models).
func schemaDocument(models []Model) (json.RawMessage, error) {
	if len(models) == 0 {
		return nil, nil
	}
	return ModelsSchema(models...)
}
