package connections

import (
	"strings"
	"time"

	"github.com/embedauth/connect/integrations"
	"github.com/embedauth/connect/internal/httpapi"
	"github.com/embedauth/connect/store"
)

// Imports (POST /connections) of AWS_SIGV4 connections: the nested
// credentials {type: "AWS_SIGV4", role_arn, region, service, external_id,
// and optionally access_key_id, secret_access_key, session_token and
// expires_at}. Without temporary credentials the refresher assumes the
// role on first use (RefreshDue), as it does on renewal.

// checkAWSImport checks nested AWS_SIGV4 import credentials.
func checkAWSImport(c *Credentials) error {
	a := &c.AWSSigV4
	bad := func(field, msg string) error {
		return store.Invalid(CodeInvalidCredentials, field+" "+msg+".",
			store.FieldError{Code: "invalid_value", Message: msg, Path: []string{"credentials", field}})
	}
	if a.RoleARN == "" {
		return store.Invalid(CodeInvalidCredentials, "role_arn is required for AWS_SIGV4 connections.",
			store.FieldError{Code: "required", Message: "is required", Path: []string{"credentials", "role_arn"}})
	}
	if !awsRoleARNRE.MatchString(a.RoleARN) {
		return bad("role_arn", "is not an IAM role ARN (arn:aws:iam::<account>:role/<name>)")
	}
	if a.Region != "" && !ValidAWSRegion(a.Region) {
		return bad("region", "is not an AWS region name")
	}
	if a.Service != "" && !awsServiceRE.MatchString(a.Service) {
		return bad("service", "must be lower-case letters, digits and '-'")
	}
	if len(a.ExternalID) > 1224 || strings.ContainsFunc(a.ExternalID, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return bad("external_id", "must be at most 1224 characters without control characters")
	}
	temp := []string{a.AccessKeyID, a.SecretAccessKey, a.SessionToken}
	given := 0
	for _, v := range temp {
		if v != "" {
			given++
		}
		if len(v) > 8<<10 || strings.ContainsAny(v, "\x00\r\n") {
			return bad("access_key_id", "and the other temporary credentials must be at most 8 KiB on one line")
		}
	}
	switch {
	case given == 0:
		// Assumed on first use.
		c.ExpiresAt, c.Raw = nil, nil
	case given < len(temp):
		return bad("access_key_id", "secret_access_key and session_token go together")
	case c.ExpiresAt == nil:
		return store.Invalid(CodeInvalidCredentials, "expires_at is required with temporary AWS credentials.",
			store.FieldError{Code: "required", Message: "is required with access_key_id", Path: []string{"credentials", "expires_at"}})
	default:
		exp := c.ExpiresAt.UTC().Truncate(time.Millisecond)
		c.ExpiresAt = &exp
		c.Raw = map[string]any{"access_key_id": a.AccessKeyID, "secret_access_key": a.SecretAccessKey,
			"session_token": a.SessionToken, "expires_at": exp.Format(time.RFC3339Nano)}
	}
	return nil
}

// importedAWS completes imported AWS_SIGV4 credentials from the import's
// connection config and the integration (region, service), and writes
// role_arn, region, service and external_id into the connection config
// where the provider's URLs read them, as the auth route does.
func importedAWS(c *Credentials, in *ImportInput, it *integrations.Integration) error {
	if c == nil || c.Type != integrations.AuthModeAWSSigV4 {
		return nil
	}
	a := &c.AWSSigV4
	cfg := func(k string) string { s, _ := in.ConnectionConfig[k].(string); return strings.TrimSpace(s) }
	if a.Region == "" {
		a.Region = cfg("region")
	}
	if a.Region == "" && it != nil {
		a.Region = strings.TrimSpace(it.IntegrationConfig["defaultRegion"])
	}
	if !ValidAWSRegion(a.Region) {
		return store.Invalid(CodeMissingAWSSigV4Region, "An AWS_SIGV4 import needs a region (credentials.region or connection_config.region).",
			store.FieldError{Code: "required", Message: "must be an AWS region name", Path: []string{"credentials", "region"}})
	}
	if a.Service == "" {
		a.Service = cfg("service")
	}
	if a.Service == "" && it != nil {
		a.Service = strings.TrimSpace(it.IntegrationConfig["service"])
	}
	if !awsServiceRE.MatchString(a.Service) {
		return store.Invalid(CodeMissingAWSSigV4Service, "An AWS_SIGV4 import needs the AWS service (credentials.service, or the integration's integration_config.service).",
			store.FieldError{Code: "required", Message: "is required", Path: []string{"credentials", "service"}})
	}
	if a.ExternalID == "" {
		a.ExternalID = cfg("external_id")
	}
	if in.ConnectionConfig == nil {
		in.ConnectionConfig = map[string]any{}
	}
	for k, v := range map[string]string{"role_arn": a.RoleARN, "region": a.Region, "service": a.Service, "external_id": a.ExternalID} {
		if _, set := in.ConnectionConfig[k]; !set && v != "" {
			in.ConnectionConfig[k] = v
		}
	}
	return nil
}

// flatAWSImport is the answer to a flat AWS_SIGV4 import.
func flatAWSImport() error {
	return httpapi.InvalidField("AWS_SIGV4 connections are imported with a nested credentials object {type, role_arn, region, ...}", "credentials")
}
