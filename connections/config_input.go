package connections

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store"
)

// The connection config an end user gives (params[...] of the auth calls
// and of the OAuth popup, and the callback's redirect_uri_metadata) is
// checked here, before anything is stored or any provider is called:
//
//   - a value the connect session presets (integrations_config_defaults,
//     not empty) wins: the end user may repeat it, not change it;
//   - every other key must be a field of the provider's connection_config
//     that the service does not fill itself (not automated), except the
//     documented special keys: oauth_scopes_override; the OAuth client
//     overrides and webhook URL keys, which are dropped;
//   - the value must be text without control characters (textProblem);
//   - the value must fit the field (integrations.FieldSpec.CheckValue:
//     type, format, prefix and suffix, pattern);
//   - a key that decides the host of a URL carrying the integration's
//     secrets (integrations.Provider.SecretHostKeys, such as Salesforce's
//     hostname) is accepted from the end user only when the field's
//     pattern pins the value down; otherwise only the backend may set it;
//   - every value, preset or stored ones included, must be safe where the
//     provider's URL templates put it (integrations.Provider.CheckURLValues).

// Field error codes of invalid_connection_config.
const (
	fieldConflict       = "conflict"
	fieldUnknown        = "unknown_key"
	fieldAutomated      = "automated"
	fieldInvalid        = "invalid_value"
	fieldPresetRequired = "preset_required"
)

// isDroppedParam reports whether an end user's params key is dropped
// silently: a webhook URL, or the OAuth client overrides (which the OAuth
// popup takes as credentials[...], and non-OAuth connections have no use
// for).
func isDroppedParam(k string) bool {
	return isClientWebhookKey(k) || k == ConfigOAuthClientIDOverride || k == ConfigOAuthClientSecretOverride
}

// checkEndUserConfig checks the end user's params of an integration whose
// provider is p against the session's preset connection config. root is
// the first element of the errors' paths ("params").
func checkEndUserConfig(p *integrations.Provider, preset, params map[string]string, root string) error {
	secretHost := p.SecretHostKeys()
	var errs []store.FieldError
	add := func(k, code, msg string) {
		errs = append(errs, store.FieldError{Code: code, Message: msg, Path: []string{root, k}})
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		if isDroppedParam(k) {
			continue
		}
		if reason := textProblem(v); reason != "" {
			add(k, fieldInvalid, reason)
			continue
		}
		if pv := preset[k]; pv != "" {
			if v != pv {
				add(k, fieldConflict, "is preset by the connect session and cannot be changed")
			}
			continue
		}
		if k == ConfigOAuthScopesOverride {
			continue
		}
		f, declared := p.ConnectionConfig[k]
		switch {
		case !declared:
			add(k, fieldUnknown, fmt.Sprintf("is not a connection config field of %s", p.Name))
			continue
		case f.Automated:
			add(k, fieldAutomated, "is set by the service, not by the end user")
			continue
		case v == "":
			continue
		}
		if reason := f.CheckValue(v); reason != "" {
			add(k, fieldInvalid, reason)
			continue
		}
		if slices.Contains(secretHost, k) && !f.PinsValue(v) {
			add(k, fieldPresetRequired, "decides the host that receives the integration's secrets: only the connect session (integrations_config_defaults) may set it")
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return invalidConfig(errs)
}

// invalidConfig is the invalid_connection_config error of field errors.
func invalidConfig(errs []store.FieldError) error {
	first := errs[0]
	name := strings.Join(first.Path, ".")
	if len(first.Path) == 2 {
		name = first.Path[0] + "[" + first.Path[1] + "]"
	}
	msg := fmt.Sprintf("The connection config %s %s.", name, first.Message)
	if len(errs) > 1 {
		msg = fmt.Sprintf("%s (and %d more problems)", strings.TrimSuffix(msg, "."), len(errs)-1) + "."
	}
	return store.Invalid(CodeInvalidConnectionConfig, msg, errs...)
}

// checkConfigURLs checks connection config values where the provider's URL
// templates put them (see integrations.Provider.CheckURLValues). root is
// the first element of the error's path: "params" for an auth call,
// "connection_config" for an import.
func checkConfigURLs(p *integrations.Provider, cfg map[string]string, root string) error {
	return unsafeConfig(p.CheckURLValues(cfg), root)
}

// unsafeConfig turns an *integrations.UnsafeValueError into
// invalid_connection_config naming the key; other errors are returned as
// they are.
func unsafeConfig(err error, root string) error {
	var ue *integrations.UnsafeValueError
	if !errors.As(err, &ue) {
		return err
	}
	key := ue.Key
	if key == "" {
		key = ue.Name
	}
	return invalidConfig([]store.FieldError{{Code: fieldInvalid,
		Message: fmt.Sprintf("cannot be used in the %s of the provider's URL: it %s", ue.Position, ue.Reason), Path: []string{root, key}}})
}

// connectionConfig checks the end user's params (see checkEndUserConfig)
// and merges them over the session's defaults for the integration. The
// OAuth client overrides and webhook URL keys are dropped.
func (ss *Sessions) connectionConfig(sess *Session, p *integrations.Provider, key string, params map[string]string) (map[string]any, error) {
	if err := checkStringMap(params, "params"); err != nil {
		return nil, store.Invalid("invalid_query_params", "The query is invalid.", fieldErrors(err)...)
	}
	preset := sess.IntegrationsConfigDefaults[key].ConnectionConfig
	if err := checkEndUserConfig(p, preset, params, "params"); err != nil {
		return nil, err
	}
	merged := map[string]string{}
	maps.Copy(merged, preset)
	maps.Copy(merged, params)
	out := make(map[string]any, len(merged))
	for k, v := range merged {
		if isDroppedParam(k) {
			continue
		}
		out[k] = v
	}
	return out, nil
}

// checkCallbackValue checks a value the provider's redirect back carries
// for one of its redirect_uri_metadata keys: the end user's browser
// delivers it, so it is end-user input.
func checkCallbackValue(p *integrations.Provider, k, v string) string {
	if reason := textProblem(v); reason != "" {
		return reason
	}
	f, declared := p.ConnectionConfig[k]
	if declared {
		if reason := f.CheckValue(v); reason != "" {
			return reason
		}
	}
	if slices.Contains(p.SecretHostKeys(), k) && !(declared && f.PinsValue(v)) {
		return "decides the host that receives the integration's secrets, and the provider's catalogue entry does not pin it down with a pattern"
	}
	return ""
}
