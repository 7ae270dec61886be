package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/jobs"
	"github.com/embedauth/connect/oplog"
	"github.com/embedauth/connect/store"
)

// JavaScriptRuntime is the Function.Runtime of the functions deployed with
// the nango CLI (POST /sync/deploy): their Code is the CommonJS bundle the
// CLI built, their SourceCode its TypeScript entry file. A host that runs
// them adds a Runtime of this name with AddRuntime.
const JavaScriptRuntime = "javascript"

// FirstOnEventVersion is the version of an on-event function deployed at
// run time without one, as Nango numbers them; each change counts from it
// (0.0.2, 0.0.3, ...).
const FirstOnEventVersion = "0.0.1"

// Deployment is a set of functions deployed together to one environment,
// as `nango deploy` sends them: all of them are stored, and the functions
// it replaces are reconciled, in one transaction, or nothing is.
type Deployment struct {
	EnvironmentID int64
	// Functions are stored as Deploy stores one (their EnvironmentID is
	// set from the Deployment's); each is set to what is stored.
	Functions []*Function
	// Reconcile deletes the stored functions of Runtime, in the
	// Integrations (all of the environment's when nil), that Functions
	// does not name.
	Reconcile bool
	// Runtime is the runtime whose functions reconciling may delete
	// (JavaScriptRuntime for the nango CLI); those of other runtimes, and
	// the functions registered in Go, are never deleted. Required.
	Runtime string
	// Integrations limits what reconciling deletes to these integrations;
	// nil means the whole environment.
	Integrations []string
}

// DeployChanges is what a deployment changes, or would (PlanDeployment).
type DeployChanges struct {
	// New, Updated and Unchanged are the deployment's functions: not
	// stored before, stored and changed, stored and the same.
	New, Updated, Unchanged []*Function
	// Deleted are the stored functions that reconciling deletes, with
	// their syncs and runs.
	Deleted []*Function
	// DeletedModels are the models of syncs deleted or updated that no
	// sync of their integration declares after the deployment: their
	// records are deleted in the background.
	DeletedModels []ModelRef
}

// ModelRef names a model of an integration's syncs.
type ModelRef struct {
	Integration string
	Model       string
}

// The errors of deployments, as the nango CLI shows them: "<message>
// (<code>)".
var (
	// ErrConcurrentDeployment refuses a deployment while another one of
	// the same environment is in progress (409).
	ErrConcurrentDeployment = store.Errorf(store.ErrConflict, "concurrent_deployment", "A deployment is already in progress")
)

// CodeRegisteredInGo is the code of the 409 that refuses a deployment
// over a function of the same integration, kind and name registered in Go
// by the host.
const CodeRegisteredInGo = "function_registered_in_go"

// DeployJobKind is the Scheduler job kind that deletes the records of the
// models a deployment removed.
const DeployJobKind = "functions.deleted_models"

// deletedModelsArgs are the arguments of a DeployJobKind job: record
// scopes of one integration.
type deletedModelsArgs struct {
	EnvironmentID int64         `json:"environment_id"`
	Integration   string        `json:"integration"`
	Scopes        []recordScope `json:"scopes"`
}

type recordScope struct {
	ConnectionID int64  `json:"connection_id"`
	Model        string `json:"model"`
	Variant      string `json:"variant"`
}

// deletedModelsJobScopes bounds the scopes of one job.
const deletedModelsJobScopes = 1000

// NextVersion is the version a FunctionStore gives a changed function
// stored without one: the stored version with its last number plus one
// when it is numbers (of up to 18 digits each) separated by dots ("7" is
// "8", "1.0.9" is "1.0.10"), else the stored version.
func NextVersion(stored string) string {
	parts := strings.Split(stored, ".")
	for _, p := range parts {
		if len(p) == 0 || len(p) > 18 || strings.Trim(p, "0123456789") != "" {
			return stored
		}
	}
	n, err := strconv.ParseInt(parts[len(parts)-1], 10, 64)
	if err != nil {
		return stored
	}
	parts[len(parts)-1] = strconv.FormatInt(n+1, 10)
	return strings.Join(parts, ".")
}

// checkDeployable checks a function deployed at run time and normalises
// its sync frequency.
func checkDeployable(f *Function) error {
	if f.Runtime == "" || f.Runtime == GoRuntime {
		return fmt.Errorf("functions: Deploy: Runtime %q: Go functions are registered with Register", f.Runtime)
	}
	if err := checkName(f.Kind, f.Integration, f.Name); err != nil {
		return err
	}
	switch f.Kind {
	case KindAction, KindOnEvent:
	case KindSync:
		fr, err := ParseFrequency(f.Definition.Runs)
		if err != nil {
			return fmt.Errorf("functions: Deploy: sync %q: runs: %w", f.Name, err)
		}
		f.Definition.Runs = fr.String()
		if err := checkWebhookSubscriptions(f.Definition.WebhookSubscriptions); err != nil {
			return fmt.Errorf("functions: Deploy: sync %q: %w", f.Name, err)
		}
		for _, m := range f.Definition.Models {
			if err := CheckSyncModel(m); err != nil {
				return fmt.Errorf("functions: Deploy: sync %q: %w", f.Name, err)
			}
		}
	default:
		return fmt.Errorf("functions: Deploy: unknown kind %q", f.Kind)
	}
	return nil
}

// registeredInGo is the refusal of a deployment over a function registered
// in Go.
func registeredInGo(fs ...*Function) error {
	e := store.Errorf(store.ErrConflict, CodeRegisteredInGo,
		"The %s %q of integration %q is registered in Go by the host: a deployment cannot replace it; rename the function.",
		fs[0].Kind, fs[0].Name, fs[0].Integration)
	for _, f := range fs {
		e.Errors = append(e.Errors, store.FieldError{Code: CodeRegisteredInGo, Path: []string{f.Integration, string(f.Kind), f.Name},
			Message: fmt.Sprintf("%s %q of integration %q is registered in Go by the host", f.Kind, f.Name, f.Integration)})
	}
	if len(fs) > 1 {
		e.Message = fmt.Sprintf("%d functions of the deployment are registered in Go by the host: a deployment cannot replace them; rename them.", len(fs))
	}
	return e
}

// Deploy stores a function whose code runs on a runtime added with
// AddRuntime (f.Runtime names it), in an environment, at run time: it is
// listed, triggered and scheduled like a registered one, and a new sync
// gets the schedules of the integration's existing connections; a sync
// whose frequency changes has its schedules re-timed (see
// DeployFunctions). f's identity is (EnvironmentID, Integration, Kind,
// Name); a function of that identity registered in Go cannot be replaced
// (function_registered_in_go). An on-event function without a version
// starts at FirstOnEventVersion. f is set to what is stored.
func (s *Service) Deploy(ctx context.Context, f *Function) error {
	if err := checkDeployable(f); err != nil {
		return err
	}
	if _, err := s.runtimeOf(f); err != nil {
		return err
	}
	if s.isRegistered(f.Integration, f.Kind, f.Name) {
		return registeredInGo(f)
	}
	if _, err := s.cfg.Integrations.Get(ctx, f.EnvironmentID, f.Integration); err != nil {
		return err
	}
	defer s.forgetFunction(f.EnvironmentID, f.Integration, f.Kind, f.Name)
	return s.st.WithTx(ctx, func(ctx context.Context) error {
		prev, err := s.st.GetFunction(ctx, f.EnvironmentID, f.Integration, f.Kind, f.Name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			prev = nil
		case err != nil:
			return err
		case prev.Runtime == GoRuntime:
			return registeredInGo(f)
		}
		_, err = s.deployOne(ctx, f, prev)
		return err
	})
}

// deployOne stores a checked function whose stored version (nil when
// none) is prev, inside the deployment's transaction: schedules for the
// existing connections of a new or changed sync, re-timed schedules for a
// sync whose frequency changed.
func (s *Service) deployOne(ctx context.Context, f *Function, prev *Function) (bool, error) {
	if f.Version == "" && prev == nil && f.Kind == KindOnEvent {
		f.Version = FirstOnEventVersion
	}
	now := s.nowUTC()
	f.DeployedAt, f.UpdatedAt = now, now
	changed, err := s.st.PutFunction(ctx, f)
	if errors.Is(err, store.ErrConflict) {
		// Stored in Go meanwhile (the Store refuses to replace it).
		return false, registeredInGo(f)
	}
	if err != nil || !changed || f.Kind != KindSync {
		return changed, err
	}
	if err := s.scheduleExisting(ctx, f); err != nil {
		return false, err
	}
	if prev != nil && prev.Definition.Runs != f.Definition.Runs {
		if err := s.retimeSchedules(ctx, f); err != nil {
			return false, err
		}
	}
	return true, nil
}

// retimeSchedules applies a sync's new frequency to its schedules, of
// every connection and variant, that have no frequency of their own: the
// next run moves by the change of interval, never to before now; a run
// due already stays due.
func (s *Service) retimeSchedules(ctx context.Context, f *Function) error {
	fr, err := ParseFrequency(f.Definition.Runs)
	if err != nil {
		return err
	}
	now := s.nowUTC()
	after := ""
	for {
		page, err := s.st.ListSyncs(ctx, SyncFilter{EnvironmentID: f.EnvironmentID, Integration: f.Integration, Name: f.Name,
			Limit: 1000, AfterID: after})
		if err != nil {
			return err
		}
		for _, sc := range page {
			if sc.Frequency != "" || sc.Interval == fr.Interval {
				continue
			}
			err := s.updateSchedule(ctx, sc.ID, func(sc *Schedule) bool {
				if sc.Frequency != "" || sc.Interval == fr.Interval {
					return false
				}
				if sc.NextRunAt != nil && sc.NextRunAt.After(now) {
					next := sc.NextRunAt.Add(fr.Interval - sc.Interval)
					if next.Before(now) {
						next = now
					}
					sc.NextRunAt = &next
				}
				sc.Interval = fr.Interval
				return true
			})
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		if len(page) < 1000 {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// PlanDeployment computes what DeployFunctions would change, changing
// nothing: the confirmation of `nango deploy`. Its errors are those of
// DeployFunctions but ErrConcurrentDeployment.
func (s *Service) PlanDeployment(ctx context.Context, d *Deployment) (*DeployChanges, error) {
	if err := s.checkDeployment(d); err != nil {
		return nil, err
	}
	ch, _, err := s.plan(ctx, d)
	return ch, err
}

// DeployFunctions stores the functions of a deployment and, when it
// reconciles, deletes the functions it replaces, in one transaction: an
// error stores nothing. Each function is stored as Deploy stores one. The
// records of DeletedModels are deleted afterwards by a Scheduler job (not
// at all without a Scheduler). One deployment of an environment runs at a
// time: another one started meanwhile is ErrConcurrentDeployment, through
// this Service, and through any Service on the same database when the
// Store is a DeployLocker (see it for the others).
func (s *Service) DeployFunctions(ctx context.Context, d *Deployment) (*DeployChanges, error) {
	if err := s.checkDeployment(d); err != nil {
		return nil, err
	}
	for _, f := range d.Functions {
		if _, err := s.runtimeOf(f); err != nil {
			return nil, err
		}
	}
	if !s.lockDeploy(d.EnvironmentID) {
		return nil, ErrConcurrentDeployment
	}
	defer s.unlockDeploy(d.EnvironmentID)
	// A transaction that loses a deadlock to a sync run (both write the
	// syncs and their runs) is run again, from the functions as given.
	given := make([]Function, len(d.Functions))
	for i, f := range d.Functions {
		given[i] = *f
	}
	var out *DeployChanges
	var err error
	for attempt := 1; ; attempt++ {
		for i, f := range d.Functions {
			*f = given[i]
		}
		out = nil
		err = s.deployTx(ctx, d, &out)
		if attempt == deployAttempts || !errors.Is(err, store.ErrUnavailable) || ctx.Err() != nil {
			break
		}
	}
	for _, f := range d.Functions {
		s.forgetFunction(f.EnvironmentID, f.Integration, f.Kind, f.Name)
	}
	if out != nil {
		for _, f := range out.Deleted {
			s.forgetFunction(f.EnvironmentID, f.Integration, f.Kind, f.Name)
		}
	}
	s.logDeployment(ctx, d, out, err)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// logDeployment records a deployment, or its failure, in the operations
// log (type deploy): what it changed, by integration and name.
func (s *Service) logDeployment(ctx context.Context, d *Deployment, out *DeployChanges, err error) {
	e := &oplog.Entry{EnvironmentID: d.EnvironmentID, Type: "deploy", Operation: "deploy", Status: oplog.StatusSuccess}
	names := func(fs []*Function) []string {
		out := make([]string, 0, len(fs))
		for _, f := range fs {
			out = append(out, f.Integration+"/"+string(f.Kind)+"/"+f.Name+"@"+f.Version)
		}
		return out
	}
	ints := map[string]bool{}
	for _, f := range d.Functions {
		ints[f.Integration] = true
	}
	if len(ints) == 1 {
		for k := range ints {
			e.IntegrationKey = k
		}
	}
	e.Meta = map[string]any{"runtime": d.Runtime, "reconcile": d.Reconcile, "functions": len(d.Functions)}
	if err != nil {
		e.Status = oplog.StatusFailure
		_, detail := httpapi.Resolve(err)
		e.Message = fmt.Sprintf("Deployment of %d functions failed: %s", len(d.Functions), detail.Message)
		e.Meta["error"] = detail.Code
	} else if out != nil {
		e.Message = fmt.Sprintf("Deployed %d functions: %d new, %d updated, %d unchanged, %d deleted",
			len(d.Functions), len(out.New), len(out.Updated), len(out.Unchanged), len(out.Deleted))
		e.Meta["new"], e.Meta["updated"], e.Meta["deleted"] = names(out.New), names(out.Updated), names(out.Deleted)
	}
	s.recordLater(ctx, e)
}

// deployAttempts bounds the transactions of one deployment.
const deployAttempts = 3

// deployTx is one attempt of DeployFunctions: its transaction.
func (s *Service) deployTx(ctx context.Context, d *Deployment, res **DeployChanges) error {
	return s.st.WithTx(ctx, func(ctx context.Context) error {
		if l, ok := any(s.st).(DeployLocker); ok {
			held, err := l.TryLockDeploy(ctx, d.EnvironmentID)
			if err != nil {
				return err
			}
			if !held {
				return ErrConcurrentDeployment
			}
		}
		ch, prev, err := s.plan(ctx, d)
		if err != nil {
			return err
		}
		scopes, err := s.deletedScopes(ctx, d.EnvironmentID, ch, prev)
		if err != nil {
			return err
		}
		out := &DeployChanges{Deleted: ch.Deleted, DeletedModels: ch.DeletedModels}
		for _, f := range d.Functions {
			p := prev[identityOf(f)]
			changed, err := s.deployOne(ctx, f, p)
			switch {
			case err != nil:
				return fmt.Errorf("functions: deploy %s %q of %q: %w", f.Kind, f.Name, f.Integration, err)
			case p == nil:
				out.New = append(out.New, f)
			case changed:
				out.Updated = append(out.Updated, f)
			default:
				out.Unchanged = append(out.Unchanged, f)
			}
		}
		for _, f := range ch.Deleted {
			err := s.st.DeleteFunction(ctx, f.EnvironmentID, f.Integration, f.Kind, f.Name)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		if err := s.queueDeletedModels(ctx, d.EnvironmentID, scopes); err != nil {
			return err
		}
		*res = out
		return nil
	})
}

// checkDeployment checks a deployment's functions, without I/O.
func (s *Service) checkDeployment(d *Deployment) error {
	if d.Runtime == "" || d.Runtime == GoRuntime {
		return fmt.Errorf("functions: Deployment.Runtime %q: a runtime other than %q is required", d.Runtime, GoRuntime)
	}
	seen := map[fnCacheKey]bool{}
	for _, f := range d.Functions {
		f.EnvironmentID = d.EnvironmentID
		if err := checkDeployable(f); err != nil {
			return err
		}
		k := identityOf(f)
		if seen[k] {
			return store.Invalid("duplicate_function", fmt.Sprintf("The %s %q of integration %q is deployed twice.", f.Kind, f.Name, f.Integration))
		}
		seen[k] = true
	}
	return nil
}

func identityOf(f *Function) fnCacheKey {
	return fnCacheKey{f.EnvironmentID, f.Integration, f.Kind, f.Name}
}

// lockDeploy takes this process's deployment lock of an environment,
// without waiting.
func (s *Service) lockDeploy(env int64) bool {
	s.deployMu.Lock()
	defer s.deployMu.Unlock()
	if s.deploying[env] {
		return false
	}
	if s.deploying == nil {
		s.deploying = map[int64]bool{}
	}
	s.deploying[env] = true
	return true
}

func (s *Service) unlockDeploy(env int64) {
	s.deployMu.Lock()
	defer s.deployMu.Unlock()
	delete(s.deploying, env)
}

// plan reads what a deployment replaces: the stored functions of its
// identities (prev) and what it changes. It refuses a deployment of a
// function into an integration that does not exist, or over a function
// registered in Go. Reconciling an integration that does not exist
// deletes nothing.
func (s *Service) plan(ctx context.Context, d *Deployment) (*DeployChanges, map[fnCacheKey]*Function, error) {
	var missing []store.FieldError
	checked := map[string]bool{}
	for _, f := range d.Functions {
		if checked[f.Integration] {
			continue
		}
		checked[f.Integration] = true
		if _, err := s.cfg.Integrations.Get(ctx, d.EnvironmentID, f.Integration); err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				return nil, nil, err
			}
			missing = append(missing, store.FieldError{Code: "unknown_provider_config", Path: []string{f.Integration},
				Message: fmt.Sprintf("the integration %q does not exist in this environment", f.Integration)})
		}
	}
	if len(missing) > 0 {
		e := store.NotFound("unknown_provider_config", "There is no integration %q in this environment: create it first.", missing[0].Path[0])
		e.Errors = missing
		return nil, nil, e
	}
	stored, err := s.st.ListFunctions(ctx, d.EnvironmentID, "")
	if err != nil {
		return nil, nil, err
	}
	prev := map[fnCacheKey]*Function{}
	for _, f := range stored {
		prev[identityOf(f)] = f
	}
	var clashes []*Function
	ch := &DeployChanges{}
	given := map[fnCacheKey]*Function{}
	for _, f := range d.Functions {
		k := identityOf(f)
		given[k] = f
		p := prev[k]
		switch {
		case s.isRegistered(f.Integration, f.Kind, f.Name) || (p != nil && p.Runtime == GoRuntime):
			clashes = append(clashes, f)
		case p == nil:
			ch.New = append(ch.New, f)
		case sameFunction(p, f):
			ch.Unchanged = append(ch.Unchanged, f)
		default:
			ch.Updated = append(ch.Updated, f)
		}
	}
	if len(clashes) > 0 {
		return nil, nil, registeredInGo(clashes...)
	}
	if d.Reconcile {
		for _, f := range stored {
			if f.Runtime == d.Runtime && given[identityOf(f)] == nil &&
				(d.Integrations == nil || slices.Contains(d.Integrations, f.Integration)) {
				ch.Deleted = append(ch.Deleted, f)
			}
		}
	}
	ch.DeletedModels = deletedModels(stored, given, ch.Deleted)
	return ch, prev, nil
}

// sameFunction reports whether storing f would change nothing of p, as
// PutFunction compares them.
func sameFunction(p, f *Function) bool {
	if p.Runtime != f.Runtime || p.Source != f.Source || string(p.Code) != string(f.Code) ||
		string(p.SourceCode) != string(f.SourceCode) || p.SDKVersion != f.SDKVersion ||
		(f.Version != "" && f.Version != p.Version) {
		return false
	}
	return sameJSON(p.Definition, f.Definition)
}

// sameJSON reports whether a and b encode to the same JSON value.
func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// deletedModels lists the models of the stored syncs that a deployment
// deletes or replaces which no sync of their integration declares after
// it, by integration then model.
func deletedModels(stored []*Function, given map[fnCacheKey]*Function, deleted []*Function) []ModelRef {
	gone := map[fnCacheKey]bool{}
	for _, f := range deleted {
		gone[identityOf(f)] = true
	}
	declared := map[ModelRef]bool{}
	var candidates []ModelRef
	for _, f := range stored {
		if f.Kind != KindSync {
			continue
		}
		k := identityOf(f)
		if given[k] != nil || gone[k] {
			for _, m := range f.Definition.Models {
				candidates = append(candidates, ModelRef{f.Integration, m.Name})
			}
		}
		if given[k] == nil && !gone[k] {
			for _, m := range f.Definition.Models {
				declared[ModelRef{f.Integration, m.Name}] = true
			}
		}
	}
	for _, f := range given {
		if f.Kind == KindSync {
			for _, m := range f.Definition.Models {
				declared[ModelRef{f.Integration, m.Name}] = true
			}
		}
	}
	var out []ModelRef
	for _, m := range candidates {
		if !declared[m] && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b ModelRef) int {
		if c := strings.Compare(a.Integration, b.Integration); c != 0 {
			return c
		}
		return strings.Compare(a.Model, b.Model)
	})
	return out
}

// deletedScopes lists the record scopes of the deleted models: those of
// every schedule of the stored syncs, deleted or replaced, that declared
// them. It reads the schedules before the deployment deletes them.
func (s *Service) deletedScopes(ctx context.Context, env int64, ch *DeployChanges, prev map[fnCacheKey]*Function) (map[string][]recordScope, error) {
	if len(ch.DeletedModels) == 0 {
		return nil, nil
	}
	dropped := map[ModelRef]bool{}
	for _, m := range ch.DeletedModels {
		dropped[m] = true
	}
	out := map[string][]recordScope{}
	for _, f := range prev {
		if f.Kind != KindSync {
			continue
		}
		var models []string
		for _, m := range f.Definition.Models {
			if dropped[ModelRef{f.Integration, m.Name}] {
				models = append(models, m.Name)
			}
		}
		if len(models) == 0 {
			continue
		}
		after := ""
		for {
			page, err := s.st.ListSyncs(ctx, SyncFilter{EnvironmentID: env, Integration: f.Integration, Name: f.Name,
				Limit: 1000, AfterID: after})
			if err != nil {
				return nil, err
			}
			for _, sc := range page {
				for _, m := range models {
					rs := recordScope{ConnectionID: sc.ConnectionID, Model: m, Variant: sc.Variant}
					if !slices.Contains(out[f.Integration], rs) {
						out[f.Integration] = append(out[f.Integration], rs)
					}
				}
			}
			if len(page) < 1000 {
				break
			}
			after = page[len(page)-1].ID
		}
	}
	return out, nil
}

// queueDeletedModels queues the jobs that delete the records of deleted
// models, in the deployment's transaction.
func (s *Service) queueDeletedModels(ctx context.Context, env int64, scopes map[string][]recordScope) error {
	if s.cfg.Scheduler == nil {
		return nil
	}
	keys := make([]string, 0, len(scopes))
	for k := range scopes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var js []jobs.Job
	for _, integration := range keys {
		all := scopes[integration]
		for len(all) > 0 {
			n := min(len(all), deletedModelsJobScopes)
			args, err := json.Marshal(deletedModelsArgs{EnvironmentID: env, Integration: integration, Scopes: all[:n]})
			if err != nil {
				return err
			}
			js = append(js, jobs.Job{Kind: DeployJobKind, Args: args, MaxAttempts: 5, Timeout: 10 * time.Minute})
			all = all[n:]
		}
	}
	if len(js) == 0 {
		return nil
	}
	return s.cfg.Scheduler.Enqueue(ctx, js...)
}

// handleDeletedModelsJob deletes the records of models a deployment
// removed, unless a sync of the integration declares the model again
// (deployed since): then they are that sync's.
func (s *Service) handleDeletedModelsJob(ctx context.Context, run *jobs.Run) error {
	var a deletedModelsArgs
	if err := json.Unmarshal(run.Args, &a); err != nil {
		return jobs.Cancel(fmt.Errorf("functions: deleted models job %s: %w", run.ID, err))
	}
	fs, err := s.st.ListFunctions(ctx, a.EnvironmentID, a.Integration)
	if err != nil {
		return err
	}
	declared := map[string]bool{}
	for _, f := range fs {
		if f.Kind == KindSync {
			for _, m := range f.Definition.Models {
				declared[m.Name] = true
			}
		}
	}
	for _, sc := range a.Scopes {
		if declared[sc.Model] {
			continue
		}
		for {
			n, err := s.st.DeleteAllRecords(ctx, RecordScope{EnvironmentID: a.EnvironmentID, ConnectionID: sc.ConnectionID,
				Model: sc.Model, Variant: sc.Variant}, retentionBatch)
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
		}
	}
	return nil
}
