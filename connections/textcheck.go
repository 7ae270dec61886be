package connections

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/embedauth/connect/store"
)

// The text of a connection (its credentials and its connection config)
// reaches HTTP headers, URLs and templates, where a control character
// cannot go: a value stored with one would make every later proxy call
// fail. Every door refuses such a value before anything is stored or sent
// (textProblem is the one rule, credentialProblem and configProblem walk
// the values):
//
//   - what an end user types (the auth calls' bodies, params[...], the
//     OAuth popup's credentials[...]) and what the backend gives (imports'
//     credentials and connection_config, a connect session's preset
//     connection_config) is refused with a 400 naming the field;
//   - what a provider answers (tokens, token_response_metadata, a
//     callback's redirect_uri_metadata) is refused as a failed flow or
//     refresh, never stored.
//
// A value must be UTF-8 without control characters: C0 (NUL, tab, line
// feed, carriage return and the others), DEL and C1. A tab is refused too:
// header values may carry one, but in a key, token or password it is a
// paste error, and it would be sent as part of the secret. The one
// exception is a key: a value that is a whole PEM block ("-----BEGIN
// ...-----" to "-----END ...-----", such as a private key or a
// certificate) or a JSON object (such as a JWK) may span lines, and may
// hold tabs, line feeds and carriage returns; never NUL or the other
// control characters. Such values are parsed as keys, never sent as they
// are.
//
// Credentials.Raw (the provider's raw token answer, or an import's raw
// copy of it) and Credentials.Scopes are kept as given, and metadata is
// free-form JSON that no template reads: none of them is checked.

// textProblem returns why v cannot be a credential or connection config
// value, or "" when it can.
func textProblem(v string) string {
	key := -1 // not known yet whether v is a key (PEM block or JSON object)
	for i := 0; i < len(v); {
		c := v[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		if c < utf8.RuneSelf { // a C0 control or DEL
			if (c == '\n' || c == '\r' || c == '\t') && key != 0 {
				if key < 0 {
					key = 0
					if isKeyBlock(v) {
						key = 1
					}
				}
				if key == 1 {
					i++
					continue
				}
			}
			return reasonControl
		}
		r, n := utf8.DecodeRuneInString(v[i:])
		if r == utf8.RuneError && n == 1 {
			return "must be UTF-8 text"
		}
		if r >= 0x80 && r <= 0x9f {
			return reasonControl
		}
		i += n
	}
	return ""
}

// reasonControl is the reason of a value with a control character.
const reasonControl = "holds a control character (such as a line break, a tab or NUL): it must be one line of text; only a PEM block or a JSON object (a key) may span lines"

// isKeyBlock reports whether v, without the white space around it, is a
// PEM block or a JSON object: a key, whose lines are its own.
func isKeyBlock(v string) bool {
	t := strings.TrimSpace(v)
	if strings.HasPrefix(t, "-----BEGIN ") && strings.HasSuffix(t, "-----") && strings.Contains(t, "\n-----END ") {
		return true
	}
	return strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") && json.Valid([]byte(t))
}

// credentialProblem returns the first value of c that textProblem
// refuses: its path of JSON names (["apiKey"], ["inputs", "privateKey"],
// ["app", "access_token"]) and the reason. The path is nil when every
// value passes. Raw and Scopes are not checked.
func credentialProblem(c *Credentials) ([]string, string) {
	if c == nil {
		return nil, ""
	}
	a := &c.AWSSigV4
	for _, f := range []struct{ name, v string }{
		{"access_token", c.AccessToken}, {"refresh_token", c.RefreshToken},
		{"oauth_token", c.OAuthToken}, {"oauth_token_secret", c.OAuthTokenSecret},
		{"token", c.Token}, {"client_id", c.ClientID}, {"client_secret", c.ClientSecret},
		{"apiKey", c.APIKey}, {"username", c.Username}, {"password", c.Password},
		{"jwtToken", c.JWTToken}, {"token_id", c.TokenID}, {"token_secret", c.TokenSecret},
		{"client_certificate", c.ClientCertificate}, {"client_private_key", c.ClientPrivateKey},
		{"role_arn", a.RoleARN}, {"region", a.Region}, {"service", a.Service}, {"external_id", a.ExternalID},
		{"access_key_id", a.AccessKeyID}, {"secret_access_key", a.SecretAccessKey}, {"session_token", a.SessionToken},
	} {
		if r := textProblem(f.v); r != "" {
			return []string{f.name}, r
		}
	}
	if o := c.ConfigOverride; o != nil {
		for _, f := range []struct{ name, v string }{{"client_id", o.ClientID}, {"client_secret", o.ClientSecret}} {
			if r := textProblem(f.v); r != "" {
				return []string{"config_override", f.name}, r
			}
		}
	}
	if rc := c.Registered; rc != nil {
		for _, f := range []struct{ name, v string }{{"client_id", rc.ClientID}, {"client_secret", rc.ClientSecret},
			{"token_endpoint", rc.TokenEndpoint}, {"resource", rc.Resource}} {
			if r := textProblem(f.v); r != "" {
				return []string{"registered_client", f.name}, r
			}
		}
	}
	if p, r := anyProblem(c.Inputs); p != nil {
		return append([]string{"inputs"}, p...), r
	}
	for _, nested := range []struct {
		name string
		c    *Credentials
	}{{"app", c.App}, {"user", c.User}} {
		if p, r := credentialProblem(nested.c); p != nil {
			return append([]string{nested.name}, p...), r
		}
	}
	return nil, ""
}

// anyProblem returns the path and reason of the first string of a decoded
// JSON value that textProblem refuses (object keys in order), or a nil
// path.
func anyProblem(v any) ([]string, string) {
	switch x := v.(type) {
	case string:
		if r := textProblem(x); r != "" {
			return []string{}, r
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if p, r := anyProblem(x[k]); p != nil {
				return append([]string{k}, p...), r
			}
		}
	case []any:
		for i, e := range x {
			if p, r := anyProblem(e); p != nil {
				return append([]string{strconv.Itoa(i)}, p...), r
			}
		}
	}
	return nil, ""
}

// configProblem returns the first key (in order) of a connection config
// whose text value textProblem refuses, and the reason; key is "" when
// every value passes. Values that are not strings are written as JSON
// where templates read them, which escapes control characters.
func configProblem(cfg map[string]any) (key, reason string) {
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if s, ok := cfg[k].(string); ok {
			if r := textProblem(s); r != "" {
				return k, r
			}
		}
	}
	return "", ""
}

// configStringProblem is configProblem for string values.
func configStringProblem(cfg map[string]string) (key, reason string) {
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if r := textProblem(cfg[k]); r != "" {
			return k, r
		}
	}
	return "", ""
}

// invalidCredentialText is the invalid_credentials error of a credential
// at path that textProblem refused for reason.
func invalidCredentialText(path []string, reason string) error {
	return store.Invalid(CodeInvalidCredentials, fmt.Sprintf("The credential %s %s.", strings.Join(path, "."), reason),
		store.FieldError{Code: "invalid_value", Message: reason, Path: path})
}

// checkTypedCredentials checks the credentials an end user typed in an
// auth call (AuthorizeInput.Credentials) and names a refused one as the
// call's body does: the token modes' fields at the top level, a TBA
// connection's own OAuth client as oauth_client_id_override and
// oauth_client_secret_override.
func checkTypedCredentials(c *Credentials) error {
	path, reason := credentialProblem(c)
	if path == nil {
		return nil
	}
	switch {
	case path[0] == "inputs" && len(path) > 1:
		path = path[1:]
	case path[0] == "config_override":
		path = []string{"oauth_" + path[1] + "_override"}
	}
	return invalidCredentialText(path, reason)
}

// flatImportNames are the fields of a flat import (ImportInput) that the
// credentials it builds hold under another name.
var flatImportNames = map[string]string{
	"apiKey":                        "api_key",
	"token":                         "access_token", // OAUTH2_CC
	"client_id":                     "oauth_client_id_override",
	"client_secret":                 "oauth_client_secret_override",
	"config_override.client_id":     "oauth_client_id_override",
	"config_override.client_secret": "oauth_client_secret_override",
}

// checkImportedCredentials checks the credentials an import built and
// names a refused one as the import's body does: under credentials for
// the nested form, by the flat field otherwise.
func checkImportedCredentials(c *Credentials, nested bool) error {
	path, reason := credentialProblem(c)
	if path == nil {
		return nil
	}
	if nested {
		return invalidCredentialText(append([]string{"credentials"}, path...), reason)
	}
	if n, ok := flatImportNames[strings.Join(path, ".")]; ok {
		path = []string{n}
	}
	return invalidCredentialText(path, reason)
}

// checkConfigText answers invalid_connection_config naming root[key] for
// the first connection config value textProblem refuses.
func checkConfigText(cfg map[string]any, root string) error {
	k, reason := configProblem(cfg)
	if k == "" {
		return nil
	}
	return invalidConfig([]store.FieldError{{Code: fieldInvalid, Message: reason, Path: []string{root, k}}})
}

// providerAnswerProblem returns, for credentials and connection config
// built from a provider's answers, a description of the first value
// textProblem refuses ("its access_token holds ..."), or "".
func providerAnswerProblem(c *Credentials, cfg map[string]any) string {
	if path, reason := credentialProblem(c); path != nil {
		return fmt.Sprintf("its %s %s", strings.Join(path, "."), reason)
	}
	if k, reason := configProblem(cfg); k != "" {
		return fmt.Sprintf("the connection config %s it sets %s", k, reason)
	}
	return ""
}
