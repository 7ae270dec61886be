package proxy

import (
	"container/list"
	"crypto/sha256"
	"net/http"
	"sync"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/store"
)

// CodeInvalidClientCertificate: the connection's client certificate (its
// provider requires one: mutual TLS) cannot be used, or the proxy's
// Transport cannot present one.
const CodeInvalidClientCertificate = "invalid_client_certificate"

// MaxClientCertTransports bounds the transports kept for connections that
// present a client certificate: one per certificate, the least recently
// used closed (its idle connections) when a new one would exceed it.
const MaxClientCertTransports = 256

// certTransports are the transports of client certificates, by the
// SHA-256 of their PEM certificate and key.
type certTransports struct {
	mu  sync.Mutex
	m   map[[sha256.Size]byte]*list.Element
	lru list.List // of *certEntry, most recent first
}

type certEntry struct {
	fp [sha256.Size]byte
	tr *http.Transport
}

// clientCertTransport returns the transport that presents the client
// certificate of credentials whose provider requires one: a clone of the
// proxy's base transport (its address policy included), kept per
// certificate. It returns nil when the credentials hold none (the
// upstream will refuse the call).
func (p *Proxy) clientCertTransport(cr *connections.Credentials) (http.RoundTripper, error) {
	if cr == nil || cr.ClientCertificate == "" || cr.ClientPrivateKey == "" {
		return nil, nil
	}
	h := sha256.New()
	h.Write([]byte(cr.ClientCertificate))
	h.Write([]byte{0})
	h.Write([]byte(cr.ClientPrivateKey))
	var fp [sha256.Size]byte
	h.Sum(fp[:0])
	ct := &p.certs
	ct.mu.Lock()
	if e, ok := ct.m[fp]; ok {
		ct.lru.MoveToFront(e)
		tr := e.Value.(*certEntry).tr
		ct.mu.Unlock()
		return tr, nil
	}
	ct.mu.Unlock()
	base, ok := p.base.(*http.Transport)
	if !ok {
		return nil, store.Invalid(CodeInvalidClientCertificate, "The proxy's Transport is not an *http.Transport: it cannot present the connection's client certificate.")
	}
	cert, err := connections.ParseClientCertificate(cr.ClientCertificate, cr.ClientPrivateKey)
	if err != nil {
		return nil, store.Invalid(CodeInvalidClientCertificate, "The connection's client certificate cannot be used: "+err.Error()+".")
	}
	tr := connections.WithClientCertificate(base, cert)
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if e, ok := ct.m[fp]; ok { // built meanwhile by another call
		ct.lru.MoveToFront(e)
		return e.Value.(*certEntry).tr, nil
	}
	if ct.m == nil {
		ct.m = map[[sha256.Size]byte]*list.Element{}
	}
	ct.m[fp] = ct.lru.PushFront(&certEntry{fp: fp, tr: tr})
	for ct.lru.Len() > MaxClientCertTransports {
		old := ct.lru.Back()
		ct.lru.Remove(old)
		oe := old.Value.(*certEntry)
		delete(ct.m, oe.fp)
		oe.tr.CloseIdleConnections()
	}
	return tr, nil
}

// clientCertTransports reports how many client certificate transports
// the proxy keeps (tests).
func (p *Proxy) clientCertTransports() int {
	p.certs.mu.Lock()
	defer p.certs.mu.Unlock()
	return p.certs.lru.Len()
}
