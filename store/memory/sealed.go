package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/embedauth/connect/functions"
	"github.com/embedauth/connect/store"
)

// sealedField is one sealed value of the store: its kind, its value, and a
// function that stores a copy of its record with the value replaced
// (stored records are never mutated).
type sealedField struct {
	kind  string
	value string
	set   func(v string)
}

// sealedFields lists every sealed value of d. The caller holds the lock.
func (d *data) sealedFields() []sealedField {
	var out []sealedField
	for id, e := range d.envs {
		out = append(out, sealedField{store.SealedSigningKey, e.SealedWebhookSigningKey, func(v string) {
			c := copyEnvironment(d.envs[id])
			c.SealedWebhookSigningKey = v
			d.envs[id] = c
		}})
	}
	for env, vars := range d.variables {
		for i, v := range vars {
			out = append(out, sealedField{store.SealedVariable, v.SealedValue, func(sv string) {
				c := slices.Clone(d.variables[env])
				c[i].SealedValue = sv
				d.variables[env] = c
			}})
		}
	}
	for id, in := range d.integrations {
		out = append(out, sealedField{store.SealedIntegrationCredentials, in.SealedCredentials, func(v string) {
			c := copyIntegration(d.integrations[id])
			c.SealedCredentials = v
			d.integrations[id] = c
		}}, sealedField{store.SealedIntegrationCustom, in.SealedCustom, func(v string) {
			c := copyIntegration(d.integrations[id])
			c.SealedCustom = v
			d.integrations[id] = c
		}})
	}
	for id, conn := range d.conns {
		out = append(out, sealedField{store.SealedConnectionCredentials, conn.SealedCredentials, func(v string) {
			c := copyConnection(d.conns[id])
			c.SealedCredentials = v
			d.conns[id] = c
		}})
	}
	for id, sess := range d.sessions {
		out = append(out, sealedField{store.SealedSessionDefaults, sess.SealedIntegrationsConfigDefaults, func(v string) {
			c := copySession(d.sessions[id])
			c.SealedIntegrationsConfigDefaults = v
			d.sessions[id] = c
		}})
	}
	for id, f := range d.flows {
		out = append(out, sealedField{store.SealedOAuthFlowSecrets, f.SealedSecrets, func(v string) {
			c := copyFlow(d.flows[id])
			c.SealedSecrets = v
			d.flows[id] = c
		}})
	}
	for id, tk := range d.actionTasks {
		// A re-sealed value keeps the task's Version and UpdatedAt, as in
		// store/postgres.
		field := func(kind, value string, set func(c *functions.ActionTask, v string)) sealedField {
			return sealedField{kind, value, func(v string) {
				c := copyTask(d.actionTasks[id])
				set(c, v)
				d.actionTasks[id] = c
			}}
		}
		out = append(out,
			field(store.SealedActionInput, tk.SealedInput, func(c *functions.ActionTask, v string) { c.SealedInput = v }),
			field(store.SealedActionOutput, tk.SealedOutput, func(c *functions.ActionTask, v string) { c.SealedOutput = v }),
			field(store.SealedActionError, tk.SealedError, func(c *functions.ActionTask, v string) { c.SealedError = v }))
	}
	for k, sc := range d.recordScopes {
		for id, r := range sc.recs {
			out = append(out, sealedField{store.SealedRecordPayload, r.SealedPayload, func(v string) {
				sc := d.ownScope(k, false)
				c := *sc.recs[id]
				c.SealedPayload = v
				sc.recs[id] = &c
			}})
		}
	}
	return out
}

// SealingKeyIDs returns, sorted, the ids of the keys that the store's
// sealed values name. The memory store has no registry: it reads every
// value, which is cheap at the sizes it is meant for.
func (s *Store) SealingKeyIDs(ctx context.Context) ([]string, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ids := map[string]struct{}{}
	for _, f := range s.d.sealedFields() {
		if id, ok := store.SealedKeyID(f.value); ok {
			ids[id] = struct{}{}
		}
	}
	return slices.Sorted(maps.Keys(ids)), nil
}

// ForgetSealingKeyID counts the sealed values that name keyID, by kind.
// SealingKeyIDs never lists an id that no value names, so there is nothing
// to forget.
func (s *Store) ForgetSealingKeyID(ctx context.Context, keyID string) (map[string]int, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	counts := map[string]int{}
	for _, f := range s.d.sealedFields() {
		if id, ok := store.SealedKeyID(f.value); ok && id == keyID {
			counts[f.kind]++
		}
	}
	return counts, nil
}

// SampleSealedValue returns one sealed value that names keyID, and its
// kind, or store.ErrNotFound.
func (s *Store) SampleSealedValue(ctx context.Context, keyID string) (string, string, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return "", "", err
	}
	defer unlock()
	fields := s.d.sealedFields()
	for _, kind := range store.SealedKinds {
		for _, f := range fields {
			if id, ok := store.SealedKeyID(f.value); ok && id == keyID && f.kind == kind {
				return f.kind, f.value, nil
			}
		}
	}
	return "", "", fmt.Errorf("no value sealed under key %q: %w", keyID, store.ErrNotFound)
}

// ResealValues replaces each sealed value of kind that names keyID with
// reseal's result.
func (s *Store) ResealValues(ctx context.Context, kind, keyID string, reseal func(string) (string, error)) (int, error) {
	if !slices.Contains(store.SealedKinds, kind) {
		return 0, fmt.Errorf("sealed value kind %q: %w", kind, store.ErrInvalid)
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	n := 0
	for _, f := range s.d.sealedFields() {
		if id, ok := store.SealedKeyID(f.value); !ok || id != keyID || f.kind != kind {
			continue
		}
		v, err := reseal(f.value)
		if err != nil {
			return n, err
		}
		if id, _ := store.SealedKeyID(v); id == keyID {
			return n, fmt.Errorf("resealing a %s value: the new value is still sealed under key %q: %w", kind, keyID, store.ErrInvalid)
		}
		f.set(v)
		n++
	}
	return n, nil
}
