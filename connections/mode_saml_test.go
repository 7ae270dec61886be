package connections

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/beevik/etree"
	dsig "github.com/russellhaering/goxmldsig"

	"github.com/embedauth/connect/integrations"
)

// samlTestKey is an RSA key and a self-signed certificate of it.
func samlTestKey(t *testing.T) (*rsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sf"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert
}

// sapAssertion is sap-success-factors' assertion entry (providers.yaml
// 0.71.10).
func sapAssertion() *integrations.Assertion {
	return &integrations.Assertion{Type: "saml", Key: "${assertionOption.privateKey}", Issuer: "www.successfactors.com",
		LifetimeInSeconds: 315360000, Audiences: "www.successfactors.com",
		Attributes:   map[string]any{"api_key": "${credentials.apiKey}", "use_username": true, "use_email": false, "external_user": false},
		SessionIndex: "${random}", NameIdentifier: "${assertionOption.userName}", Recipient: "https://${connectionConfig.apiServer}/oauth/token"}
}

// verifySAML checks the signature of a base64 assertion with an
// independent XML-DSig implementation (goxmldsig) and returns the signed
// element.
func verifySAML(t *testing.T, b64 string, cert *x509.Certificate) (*etree.Element, error) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(raw); err != nil {
		t.Fatalf("the assertion is not XML: %v\n%s", err, raw)
	}
	ctx := dsig.NewDefaultValidationContext(&dsig.MemoryX509CertificateStore{Roots: []*x509.Certificate{cert}})
	ctx.Clock = dsig.NewFakeClockAt(time.Now())
	return ctx.Validate(doc.Root())
}

// TestSAMLAssertion: sap-success-factors' assertion, signed with a PKCS #8
// PEM key and with the key as SAP hands it out (its base64 body encoded
// once more), verifies with goxmldsig against the key's certificate and
// holds the filled fields; a changed assertion no longer verifies; a key
// that is not RSA is refused.
func TestSAMLAssertion(t *testing.T) {
	t.Parallel()
	key, cert := samlTestKey(t)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	sapKey := base64.StdEncoding.EncodeToString([]byte(base64.StdEncoding.EncodeToString(der)))
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	for name, k := range map[string]string{"pem": pemKey, "sap": sapKey} {
		t.Run(name, func(t *testing.T) {
			vars := integrations.TemplateVars{ConnectionConfig: map[string]string{"apiServer": "api4.sapsf.com"},
				Credentials: map[string]string{"apiKey": "KEY<&>1"},
				Extra:       map[string]any{"assertionOption": map[string]any{"privateKey": k, "userName": "jdoe"}}}
			out, err := samlAssertion(sapAssertion(), vars, now, "abc")
			if err != nil {
				t.Fatal(err)
			}
			el, err := verifySAML(t, out, cert)
			if err != nil {
				raw, _ := base64.StdEncoding.DecodeString(out)
				t.Fatalf("goxmldsig does not verify the assertion: %v\n%s", err, raw)
			}
			text := func(path string) string {
				e := el.FindElement(path)
				if e == nil {
					t.Fatalf("no %s", path)
				}
				return e.Text()
			}
			if el.SelectAttrValue("ID", "") != "_abc" || text("./Issuer") != "www.successfactors.com" || text("./Subject/NameID") != "jdoe" ||
				text("./Conditions/AudienceRestriction/Audience") != "www.successfactors.com" {
				t.Errorf("assertion fields wrong")
			}
			data := el.FindElement("./Subject/SubjectConfirmation/SubjectConfirmationData")
			if data.SelectAttrValue("Recipient", "") != "https://api4.sapsf.com/oauth/token" ||
				data.SelectAttrValue("NotOnOrAfter", "") != now.Add(315360000*time.Second).Format("2006-01-02T15:04:05.000Z") {
				t.Errorf("SubjectConfirmationData %v", data.Attr)
			}
			if s := el.FindElement("./AuthnStatement").SelectAttrValue("SessionIndex", ""); s == "" || strings.Contains(s, "$") {
				t.Errorf("SessionIndex %q", s)
			}
			got := map[string]string{}
			for _, a := range el.FindElements("./AttributeStatement/Attribute") {
				got[a.SelectAttrValue("Name", "")] = a.FindElement("./AttributeValue").Text()
			}
			want := map[string]string{"api_key": "KEY<&>1", "use_username": "true", "use_email": "false", "external_user": "false"}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("attribute %s = %q, want %q", k, got[k], v)
				}
			}

			// Tampering breaks the signature.
			raw, _ := base64.StdEncoding.DecodeString(out)
			bad := strings.Replace(string(raw), ">jdoe<", ">root<", 1)
			if _, err := verifySAML(t, base64.StdEncoding.EncodeToString([]byte(bad)), cert); err == nil {
				t.Error("a changed assertion still verifies")
			}
		})
	}

	// Another key's certificate does not verify it.
	_, other := samlTestKey(t)
	vars := integrations.TemplateVars{ConnectionConfig: map[string]string{"apiServer": "a.example"}, Credentials: map[string]string{"apiKey": "k"},
		Extra: map[string]any{"assertionOption": map[string]any{"privateKey": pemKey, "userName": "u"}}}
	out, err := samlAssertion(sapAssertion(), vars, now, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifySAML(t, out, other); err == nil {
		t.Error("verified with another key's certificate")
	}

	// A key that is not RSA.
	vars.Extra["assertionOption"] = map[string]any{"privateKey": "not a key", "userName": "u"}
	if _, err := samlAssertion(sapAssertion(), vars, now, ""); err == nil || !strings.Contains(err.Error(), "RSA") {
		t.Errorf("bad key: %v", err)
	}
}
