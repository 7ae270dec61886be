package environments

import (
	"context"
	"errors"

	"github.com/embedauth/connect/store"
)

// Ensured is what Ensure found or made.
type Ensured struct {
	// Environment is the environment of the name given, as stored.
	Environment *Environment
	// APIKey is the key of the secret given (its hash and hint, never the
	// secret), as stored; nil when Ensure was given no key.
	APIKey *APIKey
	// CreatedEnvironment and CreatedAPIKey report what this call created:
	// both false when everything existed already.
	CreatedEnvironment bool
	CreatedAPIKey      bool
}

// ensureAttempts bounds how often Ensure starts over when a concurrent call
// created the environment or the key between its read and its write.
const ensureAttempts = 3

// errEnsureRace marks a write of Ensure that met a record a concurrent call
// created after Ensure looked for it: Ensure starts over and finds it.
var errEnsureRace = errors.New("environments: created concurrently")

// Ensure makes the environment in.Name exist with the API key key among its
// keys, and is meant to run at every start of a host (of every instance):
//
//   - when no environment has the name, it creates one from in, as Create
//     does; an existing environment is left as it is (in's other fields are
//     not applied to it);
//   - when key is not nil and no API key has its Secret, it adds the key to
//     the environment, as CreateAPIKey does, whatever other keys the
//     environment holds; a key of that secret that the environment holds
//     already is left as it is (its name and scopes are not changed).
//
// It does both in one transaction: on any error, nothing is written. It
// checks the encryption keys first (connect's Service.CheckEncryptionKeys,
// unless a check passed), so that a Service whose keys do not open the
// stored secrets writes nothing. Run it again and it changes nothing;
// several instances running it at once all succeed, and one environment
// with one such key results.
//
// key.Secret is required (16 to 512 characters without whitespace): a
// generated key could not be found again. A secret that is the key of
// another environment is refused with ErrConflict (code
// api_key_in_other_environment), as an API key opens one environment
// only: give each environment its own key.
func (s *Service) Ensure(ctx context.Context, in CreateInput, key *NewAPIKey) (*Ensured, error) {
	if err := validateCreate(in); err != nil {
		return nil, err
	}
	if err := s.checkWebhookURLs(ctx, in.WebhookURLs); err != nil {
		return nil, err
	}
	var want *APIKey
	if key != nil {
		if key.Secret == "" {
			return nil, store.Invalid("invalid_body", "The API key to ensure has no secret: give it one of 16 to 512 characters (a generated key could not be found again).")
		}
		var err error
		if want, err = s.newAPIKey(0, key.Name, key.Secret, key.Scopes); err != nil {
			return nil, err
		}
	}
	if err := s.keyring.Ready(ctx); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		out, err := s.ensure(ctx, in, want)
		if errors.Is(err, errEnsureRace) && attempt < ensureAttempts {
			continue
		}
		if errors.Is(err, errEnsureRace) {
			return nil, store.Conflict("environment_changed", "The environment %q or its API key kept changing while Ensure ran: try again.", in.Name)
		}
		return out, err
	}
}

// ensure is one attempt of Ensure, in one transaction. A record another
// transaction created after this one looked for it fails the write with
// errEnsureRace, and the transaction rolls back.
func (s *Service) ensure(ctx context.Context, in CreateInput, want *APIKey) (*Ensured, error) {
	var out *Ensured
	err := s.store.WithTx(ctx, func(ctx context.Context) error {
		out = &Ensured{}
		env, err := s.store.GetEnvironmentByName(ctx, in.Name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		var existing *APIKey
		if want != nil {
			existing, err = s.store.GetAPIKeyByHash(ctx, want.Hash)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if existing != nil && (env == nil || existing.EnvironmentID != env.ID) {
				return s.otherEnvironment(ctx, existing, in.Name)
			}
		}
		if env == nil {
			if env, err = s.newEnvironment(ctx, in); err != nil {
				return err
			}
			if err := s.store.CreateEnvironment(ctx, env); err != nil {
				if errors.Is(err, store.ErrConflict) {
					return errEnsureRace
				}
				return err
			}
			out.CreatedEnvironment = true
		}
		out.Environment = env
		switch {
		case existing != nil:
			out.APIKey = existing
		case want != nil:
			k := *want
			k.Scopes = append([]string{}, want.Scopes...)
			k.EnvironmentID, k.CreatedAt = env.ID, s.nowUTC()
			if err := s.store.CreateAPIKey(ctx, &k); err != nil {
				if errors.Is(err, store.ErrConflict) {
					return errEnsureRace
				}
				return err
			}
			out.APIKey, out.CreatedAPIKey = &k, true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// otherEnvironment is the error of Ensure given the secret of a key of
// another environment than the one named name.
func (s *Service) otherEnvironment(ctx context.Context, key *APIKey, name string) error {
	other, err := s.store.GetEnvironment(ctx, key.EnvironmentID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errEnsureRace // its environment was deleted meanwhile
		}
		return err
	}
	if other.Name == name {
		// Created with the key by a concurrent call after this one looked
		// for the environment.
		return errEnsureRace
	}
	return store.Conflict("api_key_in_other_environment",
		"The API key given for environment %q is a key of environment %q: an API key opens one environment only. "+
			"Give %q a key of its own, or name environment %q.", name, other.Name, name, other.Name)
}
