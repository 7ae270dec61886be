package connections

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/embedauth/connect/egress"
	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/store"
)

// Wire codes of AWS SigV4 connections (HTTP 400), as Nango names them.
const (
	CodeMissingAWSSigV4Config      = "missing_aws_sigv4_config"
	CodeInvalidAWSSigV4Config      = "invalid_aws_sigv4_config"
	CodeMissingAWSSigV4Service     = "missing_aws_sigv4_service"
	CodeMissingAWSSigV4STSEndpoint = "missing_aws_sigv4_sts_endpoint"
	CodeMissingAWSSigV4Builtin     = "missing_aws_sigv4_builtin_credentials"
	CodeMissingAWSSigV4Region      = "missing_aws_sigv4_region"
	CodeAWSSigV4STSFailed          = "aws_sigv4_sts_request_failed"
	// CodeConnectionTestFailed: the verification request of a new TBA or
	// AWS SigV4 connection failed.
	CodeConnectionTestFailed = "connection_test_failed"
)

// GrantAWSAssumeRole is the renewal of AWS SigV4 credentials: STS
// AssumeRole again, with the integration's settings.
const GrantAWSAssumeRole = "aws_assume_role"

// AWSSTSDuration is the lifetime asked of STS for temporary credentials.
const AWSSTSDuration = time.Hour

// AWSSigV4 are the fields of AWS_SIGV4 credentials: the role assumed (with
// the external id this service generated for it), where requests are
// signed for, and the temporary credentials STS returned.
type AWSSigV4 struct {
	RoleARN         string `json:"role_arn,omitempty"`
	Region          string `json:"region,omitempty"`
	Service         string `json:"service,omitempty"`
	ExternalID      string `json:"external_id,omitempty"`
	AccessKeyID     string `json:"access_key_id,omitempty"`
	SecretAccessKey string `json:"secret_access_key,omitempty"`
	SessionToken    string `json:"session_token,omitempty"`
}

// APIAWSSigV4 is the wire form of the AWS SigV4 fields of credentials.
type APIAWSSigV4 struct {
	RoleARN         string `json:"role_arn"`
	Region          string `json:"region"`
	Service         string `json:"service"`
	AccessKeyID     string `json:"access_key_id"`
	SecretAccessKey string `json:"secret_access_key"`
	SessionToken    string `json:"session_token"`
	ExternalID      string `json:"external_id,omitempty"`
}

func apiAWSSigV4(c *Credentials) *APIAWSSigV4 {
	a := c.AWSSigV4
	return &APIAWSSigV4{RoleARN: a.RoleARN, Region: a.Region, Service: a.Service, AccessKeyID: a.AccessKeyID,
		SecretAccessKey: a.SecretAccessKey, SessionToken: a.SessionToken, ExternalID: a.ExternalID}
}

// AWSSTSEndpointFunc returns the URL of the AWS STS endpoint of a region
// (builtin STS mode). The default is https://sts.{region}.amazonaws.com/;
// a host may replace it (tests point it at a fake). The region is checked
// against ValidAWSRegion first, so it cannot move the host.
type AWSSTSEndpointFunc func(region string) string

// DefaultAWSSTSEndpoint is AWS's regional STS endpoint.
func DefaultAWSSTSEndpoint(region string) string {
	return "https://sts." + region + ".amazonaws.com/"
}

var (
	awsRegionRE  = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$`)
	awsServiceRE = regexp.MustCompile(`^[a-z0-9-]{1,63}$`)
	awsRoleARNRE = regexp.MustCompile(`^arn:aws[a-z-]*:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}$`)
)

// ValidAWSRegion reports whether s looks like an AWS region name
// (us-east-1, us-gov-west-1, cn-north-1...).
func ValidAWSRegion(s string) bool { return awsRegionRE.MatchString(s) }

// awsSettings are an AWS SigV4 integration's settings (its
// integration_config, or Nango's custom aws_sigv4_config JSON).
type awsSettings struct {
	service, defaultRegion string
	builtin                bool
	accessKeyID, secretKey string // builtin
	stsURL                 string // custom
	authType               string // custom: "", api_key or basic
	authHeader, apiKey     string
	username, password     string
}

// awsSecretSetting are the settings read only from the integration's
// custom values (sealed), never from its integration_config (served).
var awsSecretSetting = map[string]bool{"awsAccessKeyId": true, "awsSecretAccessKey": true,
	"stsApiKey": true, "stsAuthPassword": true}

// awsSettingsOf reads the settings of an integration (opened). The
// integration's custom values win over its integration_config; Nango's
// custom aws_sigv4_config JSON, when present, is read instead.
func awsSettingsOf(it *integrations.Integration) (*awsSettings, error) {
	get := func(k string) string {
		if v := strings.TrimSpace(it.Custom[k]); v != "" {
			return v
		}
		if awsSecretSetting[k] {
			return "" // secrets only from custom, which is sealed
		}
		return strings.TrimSpace(it.IntegrationConfig[k])
	}
	if raw := it.Custom["aws_sigv4_config"]; raw != "" {
		var j struct {
			Service            string `json:"service"`
			DefaultRegion      string `json:"defaultRegion"`
			STSMode            string `json:"stsMode"`
			AWSAccessKeyID     string `json:"awsAccessKeyId"`
			AWSSecretAccessKey string `json:"awsSecretAccessKey"`
			STSEndpoint        *struct {
				URL  string `json:"url"`
				Auth *struct {
					Type     string `json:"type"`
					Header   string `json:"header"`
					Value    string `json:"value"`
					Username string `json:"username"`
					Password string `json:"password"`
				} `json:"auth"`
			} `json:"stsEndpoint"`
		}
		if err := json.Unmarshal([]byte(raw), &j); err != nil {
			return nil, store.Invalid(CodeInvalidAWSSigV4Config, "The integration's aws_sigv4_config is not a JSON object.")
		}
		m := map[string]string{"service": j.Service, "defaultRegion": j.DefaultRegion, "stsMode": j.STSMode,
			"awsAccessKeyId": j.AWSAccessKeyID, "awsSecretAccessKey": j.AWSSecretAccessKey}
		if e := j.STSEndpoint; e != nil {
			m["stsEndpointUrl"] = e.URL
			if a := e.Auth; a != nil {
				m["stsAuthType"], m["stsAuthHeader"], m["stsApiKey"] = a.Type, a.Header, a.Value
				m["stsAuthUsername"], m["stsAuthPassword"] = a.Username, a.Password
			}
		}
		get = func(k string) string { return strings.TrimSpace(m[k]) }
	}
	s := &awsSettings{service: get("service"), defaultRegion: get("defaultRegion")}
	if s.service == "" {
		return nil, store.Invalid(CodeMissingAWSSigV4Service, "The integration's AWS SigV4 settings name no service (integration_config.service).")
	}
	if !awsServiceRE.MatchString(s.service) {
		return nil, store.Invalid(CodeInvalidAWSSigV4Config, "The integration's AWS service must be lower-case letters, digits and '-'.")
	}
	if s.defaultRegion != "" && !ValidAWSRegion(s.defaultRegion) {
		return nil, store.Invalid(CodeInvalidAWSSigV4Config, "The integration's default AWS region is not a region name.")
	}
	switch mode := get("stsMode"); mode {
	case "", "builtin":
		s.builtin = true
		s.accessKeyID, s.secretKey = get("awsAccessKeyId"), get("awsSecretAccessKey")
		if s.accessKeyID == "" || s.secretKey == "" {
			return nil, store.Invalid(CodeMissingAWSSigV4Builtin, "The integration's AWS SigV4 settings lack awsAccessKeyId and awsSecretAccessKey (builtin STS mode).")
		}
	case "custom":
		s.stsURL = get("stsEndpointUrl")
		if s.stsURL == "" {
			return nil, store.Invalid(CodeMissingAWSSigV4STSEndpoint, "The integration's AWS SigV4 settings lack stsEndpointUrl (custom STS mode).")
		}
		if u, err := url.Parse(s.stsURL); err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
			return nil, store.Invalid(CodeInvalidAWSSigV4Config, "The integration's STS endpoint must be an https URL.")
		}
		s.authType = get("stsAuthType")
		switch s.authType {
		case "", "none":
			s.authType = ""
		case "api_key":
			s.authHeader, s.apiKey = get("stsAuthHeader"), get("stsApiKey")
			if s.authHeader == "" {
				s.authHeader = "x-api-key"
			}
			if s.apiKey == "" || !validHeaderName(s.authHeader) {
				return nil, store.Invalid(CodeInvalidAWSSigV4Config, "The integration's STS API key (stsApiKey, stsAuthHeader) is missing or invalid.")
			}
		case "basic":
			s.username, s.password = get("stsAuthUsername"), get("stsAuthPassword")
			if s.password == "" {
				return nil, store.Invalid(CodeInvalidAWSSigV4Config, "The integration's STS password (stsAuthPassword) is missing.")
			}
		default:
			return nil, store.Invalid(CodeInvalidAWSSigV4Config, "The integration's stsAuthType must be none, api_key or basic.")
		}
	default:
		return nil, store.Invalid(CodeInvalidAWSSigV4Config, "The integration's stsMode must be builtin or custom.")
	}
	return s, nil
}

func validHeaderName(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// awsTemp are temporary credentials from STS.
type awsTemp struct {
	accessKeyID, secretAccessKey, sessionToken string
	expiresAt                                  time.Time
}

// stsEndpoint is the builtin STS URL of a region.
func (r *refresher) stsEndpoint(region string) string {
	if r.cfg.AWSSTSEndpoint != nil {
		return r.cfg.AWSSTSEndpoint(region)
	}
	return DefaultAWSSTSEndpoint(region)
}

// assumeRole obtains temporary credentials for the role: AssumeRole signed
// with the integration's keys (builtin), or the integration's own STS
// endpoint (custom). Every failure is a *RefreshError with code
// aws_sigv4_sts_request_failed.
func (r *refresher) assumeRole(ctx context.Context, s *awsSettings, roleARN, externalID, region string) (*awsTemp, error) {
	now := r.s.nowUTC()
	rctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	var req *http.Request
	var err error
	secrets := []string{s.secretKey, s.apiKey, s.password}
	if s.builtin {
		var nb [8]byte
		_, _ = rand.Read(nb[:])
		form := url.Values{"Action": {"AssumeRole"}, "RoleArn": {roleARN}, "ExternalId": {externalID},
			"RoleSessionName": {"connect-" + hex.EncodeToString(nb[:])},
			"DurationSeconds": {strconv.Itoa(int(AWSSTSDuration / time.Second))}, "Version": {"2011-06-15"}}
		if externalID == "" {
			form.Del("ExternalId") // an imported role without one
		}
		body := form.Encode()
		req, err = http.NewRequestWithContext(rctx, http.MethodPost, r.stsEndpoint(region), strings.NewReader(body))
		if err != nil {
			return nil, &RefreshError{Code: CodeAWSSigV4STSFailed, Description: "the STS request cannot be built"}
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		req.Header.Set("Accept", "application/xml")
		sum := sha256.Sum256([]byte(body))
		if err := v4.NewSigner().SignHTTP(rctx, aws.Credentials{AccessKeyID: s.accessKeyID, SecretAccessKey: s.secretKey},
			req, hex.EncodeToString(sum[:]), "sts", region, now); err != nil {
			return nil, &RefreshError{Code: CodeAWSSigV4STSFailed, Description: "the STS request cannot be signed"}
		}
	} else {
		body, _ := json.Marshal(map[string]string{"role_arn": roleARN, "external_id": externalID, "region": region, "service": s.service})
		req, err = http.NewRequestWithContext(rctx, http.MethodPost, s.stsURL, bytes.NewReader(body))
		if err != nil {
			return nil, &RefreshError{Code: CodeAWSSigV4STSFailed, Description: "the STS request cannot be built"}
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		switch s.authType {
		case "api_key":
			req.Header.Set(s.authHeader, s.apiKey)
		case "basic":
			req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(s.username+":"+s.password)))
		}
	}
	resp, err := r.cfg.HTTPClient.Do(req)
	if err != nil {
		re := r.unreachable(ctx, err)
		return nil, &RefreshError{Code: CodeAWSSigV4STSFailed, Description: "STS: " + re.Description, Err: re.Err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxTokenResponseSize+1))
	if err != nil || len(raw) > MaxTokenResponseSize {
		return nil, &RefreshError{Status: resp.StatusCode, Code: CodeAWSSigV4STSFailed, Description: "the STS response could not be read"}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		desc := "STS answered " + resp.Status
		if code, msg := parseAWSError(raw); code != "" {
			desc += ": " + sanitize(code+": "+msg, 300, secrets)
		}
		return nil, &RefreshError{Status: resp.StatusCode, Code: CodeAWSSigV4STSFailed, Description: desc}
	}
	t, err := ParseAssumeRoleResponse(raw, now)
	if err != nil {
		return nil, &RefreshError{Status: resp.StatusCode, Code: CodeAWSSigV4STSFailed, Description: "the STS response holds no credentials"}
	}
	return t, nil
}

// ParseAssumeRoleResponse reads temporary credentials from an STS answer:
// the AssumeRole XML (or its JSON form), or a custom endpoint's JSON
// object ({credentials: {...}} or the fields themselves, in camel or snake
// case). An expiry that is missing or unreadable is now plus an hour; a
// number is Unix seconds (or milliseconds when at least 10^12).
func ParseAssumeRoleResponse(body []byte, now time.Time) (*awsTemp, error) {
	body = bytes.TrimSpace(body)
	var id, key, tok, exp string
	var expNum float64
	if len(body) > 0 && body[0] == '{' {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, err
		}
		obj := func(m map[string]any, k string) map[string]any { v, _ := m[k].(map[string]any); return v }
		c := obj(obj(obj(m, "AssumeRoleResponse"), "AssumeRoleResult"), "Credentials")
		if c == nil {
			c = m
			if inner := obj(m, "credentials"); inner != nil {
				c = inner
			}
		}
		str := func(keys ...string) string {
			for _, k := range keys {
				if s, ok := c[k].(string); ok && s != "" {
					return s
				}
			}
			return ""
		}
		id = str("AccessKeyId", "accessKeyId", "access_key_id")
		key = str("SecretAccessKey", "secretAccessKey", "secret_access_key")
		tok = str("SessionToken", "sessionToken", "session_token")
		exp = str("Expiration", "expiresAt", "expires_at", "expiration")
		for _, k := range []string{"Expiration", "expiresAt", "expires_at", "expiration"} {
			if f, ok := c[k].(float64); ok {
				expNum = f
				break
			}
		}
	} else {
		var x struct {
			Credentials struct {
				AccessKeyID     string `xml:"AccessKeyId"`
				SecretAccessKey string `xml:"SecretAccessKey"`
				SessionToken    string `xml:"SessionToken"`
				Expiration      string `xml:"Expiration"`
			} `xml:"AssumeRoleResult>Credentials"`
		}
		if err := xml.Unmarshal(body, &x); err != nil {
			return nil, err
		}
		c := x.Credentials
		id, key, tok, exp = strings.TrimSpace(c.AccessKeyID), strings.TrimSpace(c.SecretAccessKey), strings.TrimSpace(c.SessionToken), strings.TrimSpace(c.Expiration)
	}
	if id == "" || key == "" || tok == "" {
		return nil, errors.New("missing credentials")
	}
	for _, v := range []string{id, key, tok} {
		if len(v) > 8<<10 || strings.ContainsAny(v, "\x00\r\n") {
			return nil, errors.New("unusable credentials")
		}
	}
	t := &awsTemp{accessKeyID: id, secretAccessKey: key, sessionToken: tok, expiresAt: now.Add(AWSSTSDuration)}
	switch {
	case exp != "":
		if e, err := time.Parse(time.RFC3339, exp); err == nil {
			t.expiresAt = e
		}
	case expNum > 0:
		if expNum < 1e12 {
			t.expiresAt = time.Unix(int64(expNum), 0)
		} else {
			t.expiresAt = time.UnixMilli(int64(expNum))
		}
	}
	t.expiresAt = t.expiresAt.UTC().Truncate(time.Millisecond)
	return t, nil
}

// parseAWSError reads the code and message of an AWS error answer.
func parseAWSError(body []byte) (code, msg string) {
	var x struct {
		Code    string `xml:"Error>Code"`
		Message string `xml:"Error>Message"`
	}
	if xml.Unmarshal(body, &x) == nil {
		return x.Code, x.Message
	}
	return "", ""
}

// awsCredentials returns AWS_SIGV4 credentials from temporary ones.
func awsCredentials(a AWSSigV4, t *awsTemp, now time.Time) *Credentials {
	a.AccessKeyID, a.SecretAccessKey, a.SessionToken = t.accessKeyID, t.secretAccessKey, t.sessionToken
	exp := t.expiresAt
	obtained := now.Truncate(time.Millisecond)
	return &Credentials{Type: integrations.AuthModeAWSSigV4, AWSSigV4: a, ExpiresAt: &exp, ObtainedAt: &obtained,
		Raw: map[string]any{"access_key_id": t.accessKeyID, "secret_access_key": t.secretAccessKey,
			"session_token": t.sessionToken, "expires_at": exp.Format(time.RFC3339Nano)}}
}

// awsRefresh renews AWS SigV4 credentials: AssumeRole again. The token
// response carries them in Raw for mergeAWS.
func (r *refresher) awsRefresh(ctx context.Context, c *Connection) (*TokenResponse, error) {
	if r.cfg.Integration == nil {
		return nil, &RefreshError{Code: CodeMissingAWSSigV4Config, Description: "the integration's AWS settings cannot be read"}
	}
	it, err := r.cfg.Integration(ctx, c.EnvironmentID, c.IntegrationKey)
	if err != nil {
		return nil, fmt.Errorf("connections: integration %q: %w", c.IntegrationKey, err)
	}
	s, err := awsSettingsOf(it)
	if err != nil {
		var se *store.Error
		errors.As(err, &se)
		return nil, &RefreshError{Code: se.Code, Description: se.Message}
	}
	a := c.Credentials.AWSSigV4
	if !ValidAWSRegion(a.Region) {
		return nil, &RefreshError{Code: CodeMissingAWSSigV4Region, Description: "the connection has no usable region"}
	}
	t, err := r.assumeRole(ctx, s, a.RoleARN, a.ExternalID, a.Region)
	if err != nil {
		return nil, err
	}
	now := r.s.nowUTC()
	return &TokenResponse{AccessToken: t.accessKeyID, ExpiresIn: t.expiresAt.Sub(now),
		Raw: map[string]any{"access_key_id": t.accessKeyID, "secret_access_key": t.secretAccessKey,
			"session_token": t.sessionToken, "expires_at": t.expiresAt.Format(time.RFC3339Nano)}}, nil
}

// mergeAWS applies a renewal (awsRefresh) to AWS SigV4 credentials.
func mergeAWS(old *Credentials, tr *TokenResponse, now time.Time) *Credentials {
	str := func(k string) string { s, _ := tr.Raw[k].(string); return s }
	t := &awsTemp{accessKeyID: str("access_key_id"), secretAccessKey: str("secret_access_key"), sessionToken: str("session_token"),
		expiresAt: now.Add(tr.ExpiresIn).Truncate(time.Millisecond)}
	c := awsCredentials(old.AWSSigV4, t, now)
	c.ConfigOverride = old.ConfigOverride
	return c
}

// awsSigV4Input is the body of POST /auth/aws-sigv4/{integration}.
type awsSigV4Input struct {
	RoleARN *string `json:"role_arn"`
	Region  *string `json:"region"`
}

// authorizeAWS builds the credentials of an AWS SigV4 auth call: the
// integration's settings, the region (the call's, the params', or the
// integration's default), a stable external id (the connection's when
// reconnecting), AssumeRole, then GetCallerIdentity signed with the
// temporary credentials. It returns the credentials and the connection
// config values to store.
func (ss *Sessions) authorizeAWS(ctx context.Context, envID int64, key string, in AuthorizeInput, cfg map[string]string, existing map[string]any) (*Credentials, map[string]any, error) {
	a := in.Credentials.AWSSigV4
	if a.RoleARN == "" {
		return nil, nil, store.Invalid(CodeInvalidCredentials, "The credentials need role_arn.",
			store.FieldError{Code: "required", Message: "is required", Path: []string{"role_arn"}})
	}
	if !awsRoleARNRE.MatchString(a.RoleARN) {
		return nil, nil, store.Invalid(CodeInvalidCredentials, "role_arn is not an IAM role ARN (arn:aws:iam::<account>:role/<name>).",
			store.FieldError{Code: "invalid_value", Message: "is not an IAM role ARN", Path: []string{"role_arn"}})
	}
	if ss.cfg.Integrations == nil {
		return nil, nil, errors.New("connections: SessionsConfig.Integrations is not set")
	}
	it, err := ss.cfg.Integrations.Get(ctx, envID, key)
	if err != nil {
		return nil, nil, err
	}
	s, err := awsSettingsOf(it)
	if err != nil {
		return nil, nil, err
	}
	region := a.Region
	if region == "" {
		region = cfg["region"]
	}
	if region == "" {
		region = s.defaultRegion
	}
	if region == "" {
		return nil, nil, store.Invalid(CodeMissingAWSSigV4Region, "No AWS region: send region, or set the integration's defaultRegion.")
	}
	if !ValidAWSRegion(region) {
		return nil, nil, store.Invalid(CodeInvalidCredentials, "region is not an AWS region name.",
			store.FieldError{Code: "invalid_value", Message: "is not an AWS region name", Path: []string{"region"}})
	}
	externalID, _ := existing["external_id"].(string)
	if externalID == "" || len(externalID) > 1224 {
		externalID = newConnectionID()
	}
	t, err := ss.cc.assumeRole(ctx, s, a.RoleARN, externalID, region)
	if err != nil {
		var re *RefreshError
		if errors.As(err, &re) {
			return nil, nil, store.Invalid(CodeAWSSigV4STSFailed, "AssumeRole failed: "+re.summary()+".")
		}
		return nil, nil, err
	}
	a = AWSSigV4{RoleARN: a.RoleARN, Region: region, Service: s.service, ExternalID: externalID}
	creds := awsCredentials(a, t, ss.conns.nowUTC())
	if err := ss.verifyAWS(ctx, creds); err != nil {
		return nil, nil, err
	}
	overlay := map[string]any{"external_id": externalID, "role_arn": a.RoleARN, "region": region, "service": s.service}
	return creds, overlay, nil
}

// verifyAWS calls STS GetCallerIdentity signed with the new temporary
// credentials, as Nango does: a refusal is connection_test_failed.
func (ss *Sessions) verifyAWS(ctx context.Context, creds *Credentials) error {
	a := creds.AWSSigV4
	ctx, cancel := context.WithTimeout(ctx, ss.cfg.CheckTimeout)
	defer cancel()
	u, err := url.Parse(ss.cc.stsEndpoint(a.Region))
	if err != nil {
		return store.Invalid(CodeConnectionTestFailed, "The STS endpoint is not a URL.")
	}
	u.RawQuery = url.Values{"Action": {"GetCallerIdentity"}, "Version": {"2011-06-15"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return store.Invalid(CodeConnectionTestFailed, "The verification request cannot be built.")
	}
	if err := SignAWSSigV4(ctx, req, &a, nil, ss.conns.nowUTC(), "sts"); err != nil {
		return store.Invalid(CodeConnectionTestFailed, "The verification request cannot be signed.")
	}
	resp, err := ss.cfg.HTTPClient.Do(req)
	if err != nil {
		f := egress.Describe(err)
		return store.Invalid(CodeConnectionTestFailed, "The credentials could not be checked: "+f.Message+".")
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return store.Invalid(CodeConnectionTestFailed, "The temporary credentials were refused: STS answered "+resp.Status+" to GetCallerIdentity.")
	}
	return nil
}

// SignAWSSigV4 signs req with AWS Signature Version 4 for the credentials'
// region and service (service, when not empty, replaces it): the
// temporary credentials, X-Amz-Date, X-Amz-Security-Token, and the body's
// SHA-256 (body is the request's body, nil for none; S3 also gets it in
// X-Amz-Content-Sha256).
func SignAWSSigV4(ctx context.Context, req *http.Request, a *AWSSigV4, body []byte, now time.Time, service string) error {
	if service == "" {
		service = a.Service
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if service == "s3" {
		req.Header.Set("X-Amz-Content-Sha256", hash)
	}
	req.Header.Del("Authorization")
	return v4.NewSigner().SignHTTP(ctx, aws.Credentials{AccessKeyID: a.AccessKeyID, SecretAccessKey: a.SecretAccessKey,
		SessionToken: a.SessionToken}, req, hash, service, a.Region, now)
}
