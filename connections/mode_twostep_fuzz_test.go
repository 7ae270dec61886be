package connections

import (
	"encoding/xml"
	"testing"

	"github.com/embedauth/connect/integrations"
)

// FuzzXMLAnswer: any token response is read as XML or refused, never a
// panic; what is read keeps the root element as its one key.
func FuzzXMLAnswer(f *testing.F) {
	f.Add([]byte(`<response><a x="1">t</a><a>u</a><b><c>v</c></b></response>`))
	f.Add([]byte(`<?xml version="1.0"?><r/>`))
	f.Add([]byte(`<a><b>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseXMLAnswer(b)
		if err == nil && len(m) != 1 {
			t.Fatalf("%d roots from %q", len(m), b)
		}
	})
}

// FuzzXMLBody: any text in a parameter tree makes a well-formed body
// that holds the text back.
func FuzzXMLBody(f *testing.F) {
	f.Add("a<b>&\"c'", "x&y")
	f.Fuzz(func(t *testing.T, text, attr string) {
		if !isXMLText(text) || !isXMLText(attr) {
			return
		}
		body := xmlBody(integrations.ParamTree{{Key: "r", Value: integrations.ParamTree{{Key: "$k", Value: attr}, {Key: "v", Value: text}}}})
		var doc struct {
			K string `xml:"k,attr"`
			V string `xml:"v"`
		}
		if err := xml.Unmarshal(body, &doc); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		if doc.K != attr || doc.V != text {
			t.Fatalf("read back %q %q from %s", doc.K, doc.V, body)
		}
	})
}

// isXMLText reports whether s holds only characters XML 1.0 allows, none
// of which a parser normalises (CR).
func isXMLText(s string) bool {
	for _, r := range s {
		if r == '\r' || (r < 0x20 && r != '\t' && r != '\n') || r == 0xFFFD || r == 0xFFFE || r == 0xFFFF {
			return false
		}
	}
	return true
}
