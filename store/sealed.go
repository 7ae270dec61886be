package store

import (
	"context"
	"strings"
)

// Kinds of sealed values, one per sealed field of the records a Store
// holds. [SealedValues] counts and re-seals values by kind.
const (
	// SealedSigningKey is an environment's webhook signing key
	// (environments.Environment.SealedWebhookSigningKey).
	SealedSigningKey = "environment_signing_key"
	// SealedVariable is the value of an environment variable.
	SealedVariable = "environment_variable"
	// SealedIntegrationCredentials and SealedIntegrationCustom are an
	// integration's OAuth client or app credentials and its custom values.
	SealedIntegrationCredentials = "integration_credentials"
	SealedIntegrationCustom      = "integration_custom"
	// SealedConnectionCredentials are a connection's credentials.
	SealedConnectionCredentials = "connection_credentials"
	// SealedSessionDefaults are a connect session's
	// integrations_config_defaults.
	SealedSessionDefaults = "connect_session_defaults"
	// SealedOAuthFlowSecrets are the secrets of an OAuth flow in progress.
	SealedOAuthFlowSecrets = "oauth_flow_secrets"
	// SealedRecordPayload is the payload of a sync record
	// (functions.Record.SealedPayload): end users' data, the most numerous
	// of sealed values. A pruned record has none.
	SealedRecordPayload = "record_payload"
	// SealedActionInput, SealedActionOutput and SealedActionError are
	// the input, the output and the error body of an async action task
	// (functions.ActionTask.SealedInput, SealedOutput and SealedError).
	// A task has an input from its creation; its output is empty until
	// it succeeded, its error body until it failed.
	SealedActionInput  = "action_input"
	SealedActionOutput = "action_output"
	SealedActionError  = "action_error"
)

// SealedKinds lists every kind of sealed value, those of the records that
// are usually fewest first: action tasks (which retention deletes) come
// before record payloads, the most numerous.
var SealedKinds = []string{SealedSigningKey, SealedVariable, SealedIntegrationCredentials, SealedIntegrationCustom,
	SealedSessionDefaults, SealedOAuthFlowSecrets, SealedConnectionCredentials,
	SealedActionInput, SealedActionOutput, SealedActionError, SealedRecordPayload}

// SealedKeyID returns the id of the encryption key that sealed a value,
// which has the form "v1:<key id>:<data>" with a key id of 1 to 32
// letters, digits, '-' or '_'. It reports false for anything else, such as
// an empty value.
func SealedKeyID(sealed string) (string, bool) {
	rest, ok := strings.CutPrefix(sealed, "v1:")
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, ":")
	if !ok || id == "" || len(id) > 32 {
		return "", false
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
		default:
			return "", false
		}
	}
	return id, true
}

// SealedValues is the part of a Store that knows which encryption keys its
// sealed values need, so that a Service can refuse to start without them
// (connect's Service.CheckEncryptionKeys) and retire old keys
// (Service.ReencryptSecrets). Every Store implements it.
type SealedValues interface {
	// SealingKeyIDs returns, sorted, the ids of the encryption keys that
	// sealed values of the Store may be sealed under: every key id that a
	// stored sealed value names (SealedKeyID), and possibly ids that none
	// names any longer, until ForgetSealingKeyID drops them. It is called
	// at every start, so it must stay cheap however many records the
	// Store holds: a Store keeps a registry of ids up to date as values
	// are written (store/postgres does it with triggers) rather than read
	// every value.
	SealingKeyIDs(ctx context.Context) ([]string, error)
	// ForgetSealingKeyID counts the sealed values that name keyID, by kind
	// (zero counts left out), reading every sealed value. When there are
	// none it drops keyID from SealingKeyIDs, atomically with writes that
	// seal values under keyID: a value written concurrently is either
	// counted or registers keyID again.
	ForgetSealingKeyID(ctx context.Context, keyID string) (map[string]int, error)
	// SampleSealedValue returns one sealed value that names keyID, and its
	// kind, or ErrNotFound when none does: a Service opens it to check
	// that its key of that id is the one that sealed the values. Stores
	// look at the kinds with few records (signing keys, variables,
	// integrations) before connections, so that for a key in use the
	// answer is quick.
	SampleSealedValue(ctx context.Context, keyID string) (kind, sealed string, err error)
	// ResealValues replaces each sealed value of kind that names keyID
	// with reseal's result, which must name another key, and returns how
	// many it replaced. Each replacement is atomic and happens only if the
	// value did not change meanwhile. An error of reseal stops it and is
	// returned; the values replaced before stay replaced. An unknown kind
	// is ErrInvalid.
	ResealValues(ctx context.Context, kind, keyID string, reseal func(sealed string) (string, error)) (int, error)
}
