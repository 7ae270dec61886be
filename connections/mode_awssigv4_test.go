package connections

import (
	"testing"
	"time"
)

// FuzzParseAssumeRoleResponse: any STS answer is parsed without a panic,
// and credentials returned are complete and single-line.
func FuzzParseAssumeRoleResponse(f *testing.F) {
	f.Add([]byte(`<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>A</AccessKeyId><SecretAccessKey>S</SecretAccessKey><SessionToken>T</SessionToken><Expiration>2026-05-01T13:00:00Z</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>`))
	f.Add([]byte(`{"credentials":{"accessKeyId":"A","secretAccessKey":"S","sessionToken":"T","expiresAt":1777640400}}`))
	f.Add([]byte(`{"AssumeRoleResponse":{"AssumeRoleResult":{"Credentials":{"AccessKeyId":"A","SecretAccessKey":"S","SessionToken":"T"}}}}`))
	f.Add([]byte(`<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>`))
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseAssumeRoleResponse(b, now)
		if err != nil {
			return
		}
		if c.accessKeyID == "" || c.secretAccessKey == "" || c.sessionToken == "" {
			t.Fatalf("incomplete credentials %+v", c)
		}
	})
}

func TestParseAssumeRoleResponse(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	c, err := ParseAssumeRoleResponse([]byte(`{"credentials":{"access_key_id":"A","secret_access_key":"S","session_token":"T","expires_at":1777640400000}}`), now)
	if err != nil || c.accessKeyID != "A" || !c.expiresAt.Equal(time.UnixMilli(1777640400000)) {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := ParseAssumeRoleResponse([]byte(`<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>A</AccessKeyId></Credentials></AssumeRoleResult></AssumeRoleResponse>`), now); err == nil {
		t.Fatal("credentials without a secret were accepted")
	}
	c, err = ParseAssumeRoleResponse([]byte(`{"AccessKeyId":"A","SecretAccessKey":"S","SessionToken":"T"}`), now)
	if err != nil || !c.expiresAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("default expiry: %+v %v", c, err)
	}
}
