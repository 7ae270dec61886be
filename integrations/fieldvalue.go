package integrations

import (
	"math"
	"net/mail"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// CheckValue checks a non-empty value an end user gives for the field and
// returns what is wrong with it, or "" when it is acceptable:
//
//   - Type: a number must parse as a finite number, a boolean must be true
//     or false;
//   - Format: hostname (see [IsHostname]), uri or url (an absolute http or
//     https URL), email, uuid, ipv4, ipv6 or ip; other formats are not
//     checked;
//   - Prefix and Suffix are shown around the input, so the value must not
//     repeat them ("acme", not "https://acme.zendesk.com");
//   - Pattern: the value must match it (a pattern that Go's regexp
//     package cannot compile, written for JavaScript, is not checked here).
func (f FieldSpec) CheckValue(v string) string {
	switch f.Type {
	case "number":
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
			return "must be a number"
		}
	case "boolean":
		if v != "true" && v != "false" {
			return "must be true or false"
		}
	}
	switch strings.ToLower(f.Format) {
	case "hostname":
		if !IsHostname(v) {
			return "must be a host name, such as api.example.com (no scheme, path, port or IP address)"
		}
	case "uri", "url":
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "must be an absolute http or https URL"
		}
	case "email":
		if a, err := mail.ParseAddress(v); err != nil || a.Address != v {
			return "must be an email address"
		}
	case "uuid":
		if !uuidRE.MatchString(v) {
			return "must be a UUID"
		}
	case "ipv4":
		if a, err := netip.ParseAddr(v); err != nil || !a.Is4() {
			return "must be an IPv4 address"
		}
	case "ipv6":
		if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")); err != nil || !a.Is6() || a.Zone() != "" {
			return "must be an IPv6 address"
		}
	case "ip":
		if a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")); err != nil || a.Zone() != "" {
			return "must be an IP address"
		}
	}
	if len(f.Prefix) > 1 && strings.HasPrefix(v, f.Prefix) {
		return "must not start with " + f.Prefix + ", which is added to it"
	}
	if len(f.Suffix) > 1 && strings.HasSuffix(v, f.Suffix) {
		return "must not end with " + f.Suffix + ", which is added to it"
	}
	if f.Pattern != "" {
		if re, err := regexp.Compile(f.Pattern); err == nil && !re.MatchString(v) {
			return "does not match " + f.Pattern
		}
	}
	return ""
}

// PinsValue reports whether the field's pattern pins a value down: the
// pattern compiles in Go and matches the whole value. A key of
// [Provider.SecretHostKeys] may come from the end user only when it does.
func (f FieldSpec) PinsValue(v string) bool {
	if f.Pattern == "" {
		return false
	}
	re, err := regexp.Compile(`^(?:` + f.Pattern + `)$`)
	return err == nil && re.MatchString(v)
}
