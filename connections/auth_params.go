package connections

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

// ParseParams reads the connection config of an auth call from its raw
// query: every params[<key>]=<value> parameter, with the brackets literal
// (as the frontend client's fetch calls send them) or percent-encoded (as
// its OAuth popup sends them), and key and value percent-decoded. Keys that
// name a webhook URL (params[webhook_url] and the like) are dropped: a
// webhook URL cannot be set from the client side.
//
// A query that does not parse, an empty key, a key given twice, more than
// MaxConfigEntries keys, a key longer than MaxConfigKeyLength or a value
// longer than MaxConfigValueLength bytes, or text with a NUL character or
// invalid UTF-8, is an invalid_query_params error.
func ParseParams(rawQuery string) (map[string]string, error) {
	out, err := ParseBracketQuery(rawQuery, "params")
	if err != nil {
		return nil, err
	}
	for k := range out {
		if isClientWebhookKey(k) {
			delete(out, k)
		}
	}
	return out, nil
}

// ParseBracketQuery reads the parameters name[<key>]=<value> of a raw query
// (such as authorization_params[...] or credentials[...] of an OAuth
// popup's URL) into a map, with the rules of ParseParams but for the
// webhook URL keys, which it keeps.
func ParseBracketQuery(rawQuery, name string) (map[string]string, error) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, store.Invalid("invalid_query_params", "The query string cannot be parsed.")
	}
	prefix := name + "["
	out := map[string]string{}
	for param, vals := range q {
		inner, ok := strings.CutPrefix(param, prefix)
		if !ok {
			continue
		}
		key, ok := strings.CutSuffix(inner, "]")
		if !ok || key == "" {
			return nil, httpapi.InvalidQuery(param, fmt.Sprintf("must be %s[<key>] with a non-empty key", name))
		}
		if len(vals) != 1 {
			return nil, httpapi.InvalidQuery(param, "must be given once")
		}
		if len(out) >= MaxConfigEntries {
			return nil, httpapi.InvalidQuery(name, fmt.Sprintf("must have at most %d keys", MaxConfigEntries))
		}
		if err := checkString(key, MaxConfigKeyLength); err != nil {
			return nil, httpapi.InvalidQuery(param, fmt.Sprintf("the key must be valid UTF-8 of at most %d bytes without NUL characters", MaxConfigKeyLength))
		}
		if err := checkString(vals[0], MaxConfigValueLength); err != nil {
			return nil, httpapi.InvalidQuery(param, fmt.Sprintf("the value must be valid UTF-8 of at most %d bytes without NUL characters", MaxConfigValueLength))
		}
		out[key] = vals[0]
	}
	return out, nil
}
