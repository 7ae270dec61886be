package sigcheck

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// PercentEncode is RFC 3986 percent-encoding (unreserved characters kept).
func PercentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// OAuth1HMACSHA256 verifies the OAuth 1 HMAC-SHA256 signature of r
// (whose scheme and host are base's) and returns its realm, consumer key
// and token, or an error.
func OAuth1HMACSHA256(r *http.Request, base, consumerSecret, tokenSecret string) (realm, consumer, token string, err error) {
	h, ok := strings.CutPrefix(r.Header.Get("Authorization"), "OAuth ")
	if !ok {
		return "", "", "", fmt.Errorf("no OAuth header: %q", r.Header.Get("Authorization"))
	}
	params := map[string]string{}
	for _, part := range strings.Split(h, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		uv, uerr := url.PathUnescape(strings.Trim(v, `"`))
		if uerr != nil {
			return "", "", "", uerr
		}
		params[k] = uv
	}
	if params["oauth_signature_method"] != "HMAC-SHA256" {
		return "", "", "", fmt.Errorf("signature method %q", params["oauth_signature_method"])
	}
	var pairs []string
	for k, v := range params {
		if k == "oauth_signature" || k == "realm" {
			continue
		}
		pairs = append(pairs, PercentEncode(k)+"="+PercentEncode(v))
	}
	for k, vs := range r.URL.Query() {
		for _, v := range vs {
			pairs = append(pairs, PercentEncode(k)+"="+PercentEncode(v))
		}
	}
	sort.Strings(pairs)
	baseString := r.Method + "&" + PercentEncode(base+r.URL.Path) + "&" + PercentEncode(strings.Join(pairs, "&"))
	mac := hmac.New(sha256.New, []byte(PercentEncode(consumerSecret)+"&"+PercentEncode(tokenSecret)))
	mac.Write([]byte(baseString))
	if want := base64.StdEncoding.EncodeToString(mac.Sum(nil)); !hmac.Equal([]byte(want), []byte(params["oauth_signature"])) {
		return "", "", "", fmt.Errorf("bad signature")
	}
	return params["realm"], params["oauth_consumer_key"], params["oauth_token"], nil
}

func OAuthParam(h, name string) string {
	for _, part := range strings.Split(strings.TrimPrefix(h, "OAuth "), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		if k == name {
			s, _ := url.PathUnescape(strings.Trim(v, `"`))
			return s
		}
	}
	return ""
}

// SigV4 verifies the AWS Signature Version 4 of r for the secret
// key, written from AWS's specification: canonical request, string to
// sign, derived key. It returns the access key id, region and service of
// the credential scope.
func SigV4(r *http.Request, body []byte, secretOf func(akid string) (string, bool)) (akid, region, service string, err error) {
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	if !ok {
		return "", "", "", fmt.Errorf("no SigV4 Authorization: %q", r.Header.Get("Authorization"))
	}
	fields := map[string]string{}
	for _, part := range strings.Split(auth, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return "", "", "", fmt.Errorf("credential %q", fields["Credential"])
	}
	akid, date, region, service := scope[0], scope[1], scope[2], scope[3]
	secret, ok := secretOf(akid)
	if !ok {
		return "", "", "", fmt.Errorf("unknown access key %s", akid)
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if !strings.HasPrefix(amzDate, date) {
		return "", "", "", fmt.Errorf("date %q, scope %q", amzDate, date)
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	var ch strings.Builder
	for _, h := range signed {
		var v string
		switch h {
		case "host":
			v = r.Host
		case "content-length":
			v = strconv.FormatInt(r.ContentLength, 10)
		default:
			v = strings.Join(r.Header.Values(h), ",")
		}
		ch.WriteString(h + ":" + strings.Join(strings.Fields(v), " ") + "\n")
	}
	q := r.URL.Query()
	var qs []string
	for k, vs := range q {
		for _, v := range vs {
			qs = append(qs, PercentEncode(k)+"="+PercentEncode(v))
		}
	}
	sort.Strings(qs)
	var segs []string
	for _, s := range strings.Split(r.URL.Path, "/") {
		segs = append(segs, PercentEncode(s))
	}
	path := strings.Join(segs, "/")
	if service != "s3" { // every service but S3 encodes the path twice
		segs = segs[:0]
		for _, s := range strings.Split(path, "/") {
			segs = append(segs, PercentEncode(s))
		}
		path = strings.Join(segs, "/")
	}
	sum := sha256.Sum256(body)
	creq := strings.Join([]string{r.Method, path, strings.Join(qs, "&"), ch.String(), fields["SignedHeaders"], hex.EncodeToString(sum[:])}, "\n")
	cs := sha256.Sum256([]byte(creq))
	sts := strings.Join([]string{"AWS4-HMAC-SHA256", amzDate, strings.Join(scope[1:], "/"), hex.EncodeToString(cs[:])}, "\n")
	mac := func(key []byte, s string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(s))
		return m.Sum(nil)
	}
	k := mac(mac(mac(mac([]byte("AWS4"+secret), date), region), service), "aws4_request")
	if want := hex.EncodeToString(mac(k, sts)); want != fields["Signature"] {
		return "", "", "", fmt.Errorf("bad signature")
	}
	return akid, region, service, nil
}
