package connections

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/embedauth/connect/integrations"
)

// The namespaces and algorithms of a SAML bearer assertion.
const (
	nsSAML      = "urn:oasis:names:tc:SAML:2.0:assertion"
	nsDSig      = "http://www.w3.org/2000/09/xmldsig#"
	nsXS        = "http://www.w3.org/2001/XMLSchema"
	nsXSI       = "http://www.w3.org/2001/XMLSchema-instance"
	algExcC14N  = "http://www.w3.org/2001/10/xml-exc-c14n#"
	algEnvelope = "http://www.w3.org/2000/09/xmldsig#enveloped-signature"
	algRSA256   = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"
	algSHA256   = "http://www.w3.org/2001/04/xmlenc#sha256"
)

// samlAssertion builds the SAML 2.0 bearer assertion a TWO_STEP provider
// describes (Nango's shape: Issuer, Subject with NameID and a bearer
// SubjectConfirmation, Conditions with the audiences, an AuthnStatement,
// the attributes as xs:string values), its string fields filled from
// vars; signs it with the RSA key of a.Key (enveloped XML signature,
// exclusive canonicalization, RSA-SHA256, placed after the Issuer) when
// there is one; and returns the document in base64. id is the
// assertion's ID (random when empty).
func samlAssertion(a *integrations.Assertion, vars integrations.TemplateVars, now time.Time, id string) (string, error) {
	fill := func(field, tmpl string) (string, error) {
		if tmpl == "" {
			return "", nil
		}
		s, err := integrations.Interpolate(tmpl, vars)
		if err != nil {
			var mv *integrations.MissingValueError
			if errors.As(err, &mv) {
				return "", &RefreshError{Code: CodeInvalidCredentials, Description: fmt.Sprintf("the SAML assertion's %s needs %s", field, strings.Join(mv.Names, ", ")), Err: err}
			}
			return "", &RefreshError{Description: fmt.Sprintf("the SAML assertion's %s cannot be built", field), Err: err}
		}
		return s, nil
	}
	var f struct{ issuer, audiences, recipient, inResponseTo, sessionIndex, nameID, key string }
	for _, x := range []struct {
		name string
		tmpl string
		dst  *string
	}{{"issuer", a.Issuer, &f.issuer}, {"audiences", a.Audiences, &f.audiences}, {"recipient", a.Recipient, &f.recipient},
		{"inResponseTo", a.InResponseTo, &f.inResponseTo}, {"sessionIndex", a.SessionIndex, &f.sessionIndex},
		{"nameIdentifier", a.NameIdentifier, &f.nameID}, {"key", a.Key, &f.key}} {
		v, err := fill(x.name, x.tmpl)
		if err != nil {
			return "", err
		}
		*x.dst = v
	}
	if id == "" {
		r := make([]byte, 16)
		if _, err := rand.Read(r); err != nil {
			return "", &RefreshError{Description: "the SAML assertion cannot be made", Err: err}
		}
		id = hex.EncodeToString(r)
	}
	life := a.LifetimeInSeconds
	if life <= 0 {
		life = 300
	}
	stamp := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
	issued, until := stamp(now), stamp(now.Add(time.Duration(life)*time.Second))

	root := &xmlEl{name: "saml:Assertion", ns: []xmlAttr{{"xmlns:saml", nsSAML}},
		attrs: []xmlAttr{{"ID", "_" + id}, {"Version", "2.0"}, {"IssueInstant", issued}}}
	root.add(&xmlEl{name: "saml:Issuer", text: f.issuer})
	subject := root.add(&xmlEl{name: "saml:Subject"})
	format := a.NameIdentifierFormat
	if format == "" {
		format = "urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified"
	}
	subject.add(&xmlEl{name: "saml:NameID", attrs: []xmlAttr{{"Format", format}}, text: f.nameID})
	conf := subject.add(&xmlEl{name: "saml:SubjectConfirmation", attrs: []xmlAttr{{"Method", "urn:oasis:names:tc:SAML:2.0:cm:bearer"}}})
	data := &xmlEl{name: "saml:SubjectConfirmationData"}
	if f.recipient != "" {
		data.attrs = append(data.attrs, xmlAttr{"Recipient", f.recipient})
	}
	if f.inResponseTo != "" {
		data.attrs = append(data.attrs, xmlAttr{"InResponseTo", f.inResponseTo})
	}
	data.attrs = append(data.attrs, xmlAttr{"NotOnOrAfter", until})
	conf.add(data)
	cond := root.add(&xmlEl{name: "saml:Conditions", attrs: []xmlAttr{{"NotBefore", issued}, {"NotOnOrAfter", until}}})
	if f.audiences != "" {
		ar := cond.add(&xmlEl{name: "saml:AudienceRestriction"})
		for _, aud := range strings.Split(f.audiences, ",") {
			ar.add(&xmlEl{name: "saml:Audience", text: aud})
		}
	}
	authn := root.add(&xmlEl{name: "saml:AuthnStatement", attrs: []xmlAttr{{"AuthnInstant", issued}}})
	if f.sessionIndex != "" {
		authn.attrs = append(authn.attrs, xmlAttr{"SessionIndex", f.sessionIndex})
	}
	ref := a.AuthnContextClassRef
	if ref == "" {
		ref = "urn:oasis:names:tc:SAML:2.0:ac:classes:unspecified"
	}
	authn.add(&xmlEl{name: "saml:AuthnContext"}).add(&xmlEl{name: "saml:AuthnContextClassRef", text: ref})
	if len(a.Attributes) > 0 {
		st := root.add(&xmlEl{name: "saml:AttributeStatement", ns: []xmlAttr{{"xmlns:xs", nsXS}, {"xmlns:xsi", nsXSI}}})
		for _, name := range slices.Sorted(mapsKeys(a.Attributes)) {
			values, ok := a.Attributes[name].([]any)
			if !ok {
				values = []any{a.Attributes[name]}
			}
			at := st.add(&xmlEl{name: "saml:Attribute", attrs: []xmlAttr{{"Name", name}, {"NameFormat", "urn:oasis:names:tc:SAML:2.0:attrname-format:basic"}}})
			for _, v := range values {
				text := scalarText(v)
				if s, ok := v.(string); ok {
					var err error
					if text, err = fill("attribute "+name, s); err != nil {
						return "", err
					}
				}
				at.add(&xmlEl{name: "saml:AttributeValue", attrs: []xmlAttr{{"xsi:type", "xs:string"}}, text: text})
			}
		}
	}
	if strings.TrimSpace(f.key) != "" {
		key, err := samlSigningKey(f.key)
		if err != nil {
			return "", err
		}
		sig, err := envelopedSignature(root, key)
		if err != nil {
			return "", err
		}
		// After the Issuer, as the schema wants.
		root.children = slices.Insert(root.children, 1, sig)
	}
	var b bytes.Buffer
	root.write(&b, false, nil, nil)
	return base64.StdEncoding.EncodeToString(b.Bytes()), nil
}

func mapsKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// samlSigningKey reads the RSA private key of a SAML assertion: PEM
// (PKCS #8 or PKCS #1), or its base64 body alone, which may itself be
// base64 encoded once more (as SAP SuccessFactors hands it out).
func samlSigningKey(s string) (*rsa.PrivateKey, error) {
	s = strings.ReplaceAll(s, `\n`, "\n")
	var body strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "-----") {
			body.WriteString(line)
		}
	}
	der, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(body.String()), ""))
	if err == nil && strings.HasPrefix(string(der), "MII") {
		der, err = base64.StdEncoding.DecodeString(strings.TrimSpace(string(der)))
	}
	bad := &RefreshError{Code: CodeInvalidCredentials, Description: "the SAML signing key is not an RSA private key"}
	if err != nil {
		return nil, bad
	}
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		if rk, ok := k.(*rsa.PrivateKey); ok {
			return rk, nil
		}
		return nil, bad
	}
	if rk, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return rk, nil
	}
	return nil, bad
}

// envelopedSignature signs root (which must carry an ID attribute): the
// digest of its exclusive canonical form (the signature is not part of
// it: the enveloped-signature transform), and the signature of the
// SignedInfo's exclusive canonical form.
func envelopedSignature(root *xmlEl, key *rsa.PrivateKey) (*xmlEl, error) {
	var c bytes.Buffer
	root.write(&c, true, nil, map[string]string{})
	digest := sha256.Sum256(c.Bytes())
	id := ""
	for _, a := range root.attrs {
		if a.name == "ID" {
			id = a.value
		}
	}
	reference := &xmlEl{name: "Reference", attrs: []xmlAttr{{"URI", "#" + id}}}
	transforms := reference.add(&xmlEl{name: "Transforms"})
	transforms.add(&xmlEl{name: "Transform", attrs: []xmlAttr{{"Algorithm", algEnvelope}}})
	transforms.add(&xmlEl{name: "Transform", attrs: []xmlAttr{{"Algorithm", algExcC14N}}})
	reference.add(&xmlEl{name: "DigestMethod", attrs: []xmlAttr{{"Algorithm", algSHA256}}})
	reference.add(&xmlEl{name: "DigestValue", text: base64.StdEncoding.EncodeToString(digest[:])})
	signedInfo := &xmlEl{name: "SignedInfo"}
	signedInfo.add(&xmlEl{name: "CanonicalizationMethod", attrs: []xmlAttr{{"Algorithm", algExcC14N}}})
	signedInfo.add(&xmlEl{name: "SignatureMethod", attrs: []xmlAttr{{"Algorithm", algRSA256}}})
	signedInfo.add(reference)

	// SignedInfo sits in Signature (default namespace xmldsig) in the
	// assertion (saml): those are its namespaces in scope.
	var si bytes.Buffer
	signedInfo.write(&si, true, map[string]string{"saml": nsSAML, "": nsDSig}, map[string]string{})
	h := sha256.Sum256(si.Bytes())
	sum, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, h[:])
	if err != nil {
		return nil, &RefreshError{Code: CodeInvalidCredentials, Description: "the SAML assertion cannot be signed with the key"}
	}
	sig := &xmlEl{name: "Signature", ns: []xmlAttr{{"xmlns", nsDSig}}}
	sig.add(signedInfo)
	sig.add(&xmlEl{name: "SignatureValue", text: base64.StdEncoding.EncodeToString(sum)})
	return sig, nil
}

// xmlEl is an element of a document built here: its namespace
// declarations as written, its attributes, and either children or text.
type xmlEl struct {
	name     string
	ns       []xmlAttr // xmlns / xmlns:p declarations
	attrs    []xmlAttr
	children []*xmlEl
	text     string
}

type xmlAttr struct{ name, value string }

func (e *xmlEl) add(c *xmlEl) *xmlEl {
	e.children = append(e.children, c)
	return c
}

func prefixOf(qname string) string {
	p, _, ok := strings.Cut(qname, ":")
	if !ok {
		return ""
	}
	return p
}

// write writes e. As written (canonical false), the declarations stand
// where they were put. In exclusive canonical form (canonical true: XML
// Exclusive Canonicalization 1.0 without comments), an element declares
// the namespaces it visibly uses (its own prefix, its attributes'
// prefixes) that the nearest output ancestor did not declare with the
// same URI (rendered), namespace declarations come first, attributes are
// sorted by namespace URI then local name, and every element has an end
// tag. scope holds the declarations in scope from outside e.
func (e *xmlEl) write(b *bytes.Buffer, canonical bool, scope, rendered map[string]string) {
	inScope := map[string]string{}
	for k, v := range scope {
		inScope[k] = v
	}
	for _, d := range e.ns {
		p := ""
		if _, after, ok := strings.Cut(d.name, ":"); ok {
			p = after
		}
		inScope[p] = d.value
	}
	b.WriteString("<" + e.name)
	var childRendered map[string]string
	if canonical {
		used := []string{prefixOf(e.name)}
		for _, a := range e.attrs {
			if p := prefixOf(a.name); p != "" && !slices.Contains(used, p) {
				used = append(used, p)
			}
		}
		slices.Sort(used)
		childRendered = map[string]string{}
		for k, v := range rendered {
			childRendered[k] = v
		}
		for _, p := range used {
			uri := inScope[p]
			if prev, ok := rendered[p]; ok && prev == uri {
				continue
			}
			if p == "" && uri == "" {
				if prev, ok := rendered[""]; !ok || prev == "" {
					continue
				}
			}
			if p == "" {
				b.WriteString(` xmlns="` + c14nAttrEscape(uri) + `"`)
			} else {
				b.WriteString(" xmlns:" + p + `="` + c14nAttrEscape(uri) + `"`)
			}
			childRendered[p] = uri
		}
		attrs := slices.Clone(e.attrs)
		key := func(a xmlAttr) string {
			p := prefixOf(a.name)
			local := a.name
			if p != "" {
				local = a.name[len(p)+1:]
				return inScope[p] + "\x00" + local
			}
			return "\x00" + local
		}
		slices.SortFunc(attrs, func(x, y xmlAttr) int { return strings.Compare(key(x), key(y)) })
		for _, a := range attrs {
			b.WriteString(" " + a.name + `="` + c14nAttrEscape(a.value) + `"`)
		}
	} else {
		for _, a := range append(slices.Clone(e.ns), e.attrs...) {
			b.WriteString(" " + a.name + `="` + c14nAttrEscape(a.value) + `"`)
		}
	}
	b.WriteString(">")
	if len(e.children) == 0 {
		b.WriteString(strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\r", "&#xD;").Replace(e.text))
	}
	for _, c := range e.children {
		c.write(b, canonical, inScope, childRendered)
	}
	b.WriteString("</" + e.name + ">")
}

// c14nAttrEscape escapes an attribute value as canonical XML writes it.
func c14nAttrEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", `"`, "&quot;", "\t", "&#x9;", "\n", "&#xA;", "\r", "&#xD;").Replace(s)
}
