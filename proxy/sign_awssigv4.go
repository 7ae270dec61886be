package proxy

import (
	"fmt"
	"net/http"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/store"
)

// awsSigner returns what an AWS SigV4 connection's requests are signed
// with: its temporary credentials, region (the connection config's when
// the credentials lack one) and service.
func awsSigner(t *Target, cr *connections.Credentials) *connections.AWSSigV4 {
	a := cr.AWSSigV4
	if a.Region == "" {
		a.Region, _ = t.Connection.ConnectionConfig["region"].(string)
	}
	if a.Service == "" {
		a.Service, _ = t.Connection.ConnectionConfig["service"].(string)
	}
	return &a
}

// signAWS signs r (the transport's copy) with AWS Signature Version 4:
// the body's hash is part of the signature, so a body must be kept in
// memory (at most MaxReplayBody, with a known length).
func (c *call) signAWS(a *connections.AWSSigV4, r *http.Request) error {
	var body []byte
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		if !c.bodyKept {
			return store.Invalid(CodeTemplateFailed, fmt.Sprintf(
				"AWS SigV4 signs the request body, which must then be at most %d bytes with a known length.", c.p.cfg.MaxReplayBody))
		}
		body = c.body
	}
	if a.AccessKeyID == "" || a.SecretAccessKey == "" || a.Region == "" || a.Service == "" {
		return store.Invalid(CodeUnsupportedSigning, "The connection's AWS credentials, region or service are missing.")
	}
	if err := connections.SignAWSSigV4(r.Context(), r, a, body, c.p.cfg.Now().UTC(), ""); err != nil {
		return store.Invalid(CodeUnsupportedSigning, "The request cannot be signed with AWS SigV4.")
	}
	return nil
}
