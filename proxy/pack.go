package proxy

import (
	"encoding/binary"
	"net/url"
	"time"

	"github.com/dghubble/oauth1"

	"github.com/embedauth/connect/connections"
	"github.com/embedauth/connect/integrations"
)

// Packed is a Target made ready for calls and kept in a form the garbage
// collector does not look into: what calls inject and the base URL they
// go to, computed once, with the parts of the connection calls read (its
// identity, auth mode and credentials; not its connection config,
// metadata, tags, errors, sealed form, scopes or raw token response),
// encoded in one string. A cache that keeps many connections (the
// Service's keeps up to 100,000) keeps Packed values: each costs a
// collection the marking of one pointer-free string, where a Target with
// everything it points to costs dozens of pointers in scattered memory,
// which made collections, and so calls, slower as the cache filled
// (BenchmarkPackHeap measures both). Target rebuilds a Target for each
// call, with one allocation.
//
// The zero Packed holds nothing; Target returns nil for it.
type Packed struct {
	data     string                 // the encoding of pack; no pointers inside
	provider *integrations.Provider // shared by the provider's connections
	signer   *oauth1.Transport      // OAuth 1 and TBA
	full     *Target                // a Target that could not be primed, kept as it is

	// What Fresh reads, without decoding.
	expires, obtained instant
	ccNoToken         bool // client credentials without a token yet
	hasCreds          bool
}

// instant is a *time.Time without a pointer: set is false for nil.
type instant struct {
	set  bool
	sec  int64
	nsec int32
}

func instantOf(t *time.Time) instant {
	if t == nil {
		return instant{}
	}
	return instant{set: true, sec: t.Unix(), nsec: int32(t.Nanosecond())}
}

func (i instant) time(dst *time.Time) *time.Time {
	if !i.set {
		return nil
	}
	*dst = time.Unix(i.sec, int64(i.nsec))
	return dst
}

// Pack computes what calls to t inject and the provider's base URL, and
// returns t in packed form. When either cannot be computed, the Packed
// holds t as it is and its calls report the error. t is not modified.
func (p *Proxy) Pack(t *Target) Packed {
	if t == nil || t.Connection == nil || t.Provider == nil {
		return Packed{full: t}
	}
	inj := t.injection.Load()
	if inj == nil {
		var err error
		if inj, err = p.inject(t); err != nil {
			return Packed{full: t}
		}
	}
	if len(inj.perRequest) > 0 || inj.aws != nil || inj.tls != nil {
		// Templates computed per request (and the values they read), AWS
		// SigV4 signatures and client certificates (their transport) are
		// not packed: the target is kept as it is.
		return Packed{full: t}
	}
	u, err := (&call{p: p, t: t}).checkedBaseURL()
	if err != nil || u.User != nil { // parseBaseURL refuses user info: not packed
		return Packed{full: t}
	}
	k := Packed{provider: t.Provider, signer: inj.signer}
	var e encoder
	c := t.Connection
	e.ints(c.ID, c.EnvironmentID, int64(c.RefreshAttempts), c.Version)
	e.strings(c.IntegrationKey, c.ConnectionID, c.Provider, c.WebhookURLOverride, c.AuthMode)
	e.times(c.CredentialsExpiresAt, c.LastFetchedAt, c.LastRefreshFailure, &c.CreatedAt, &c.UpdatedAt)
	if cr := c.Credentials; cr != nil {
		k.hasCreds = true
		k.ccNoToken = cr.Type == integrations.AuthModeOAuth2CC && cr.Token == ""
		k.expires, k.obtained = instantOf(cr.ExpiresAt), instantOf(cr.ObtainedAt)
		e.bool(true)
		e.strings(cr.Type, cr.AccessToken, cr.RefreshToken, cr.OAuthToken, cr.OAuthTokenSecret, cr.Token,
			cr.ClientID, cr.ClientSecret, cr.APIKey, cr.Username, cr.Password, cr.JWTToken, cr.TokenID, cr.TokenSecret)
		e.times(cr.ExpiresAt, cr.ObtainedAt)
		e.bool(cr.ConfigOverride != nil)
		if o := cr.ConfigOverride; o != nil {
			e.strings(o.ClientID, o.ClientSecret)
		}
	} else {
		e.bool(false)
	}
	e.strings(t.ClientID, t.ClientSecret, t.PrivateKey)
	e.ints(int64(len(inj.header)))
	for _, f := range inj.header {
		e.strings(f.name)
		e.ints(int64(len(f.values)))
		e.strings(f.values...)
	}
	e.ints(int64(len(inj.query)))
	for _, q := range inj.query {
		e.strings(q[0], q[1])
	}
	e.ints(int64(len(inj.secrets)))
	e.strings(inj.secrets...)
	e.strings(u.Scheme, u.Opaque, u.Host, u.Path, u.RawPath, u.RawQuery, u.Fragment, u.RawFragment)
	e.bool(u.ForceQuery)
	e.bool(u.OmitHost)
	k.data = string(e.b)
	return k
}

// Fresh reports whether the packed credentials are not due for a refresh
// at now, by connections.RefreshDue with threshold.
func (k Packed) Fresh(now time.Time, threshold time.Duration) bool {
	if k.full != nil {
		return k.full.Connection == nil || !connections.RefreshDue(k.full.Connection.Credentials, now, threshold)
	}
	if !k.hasCreds {
		return true
	}
	cr := connections.Credentials{}
	if k.ccNoToken {
		cr.Type, cr.Token = integrations.AuthModeOAuth2CC, ""
	}
	var exp, obt time.Time
	cr.ExpiresAt, cr.ObtainedAt = k.expires.time(&exp), k.obtained.time(&obt)
	return !connections.RefreshDue(&cr, now, threshold)
}

// Provider returns the packed Target's provider.
func (k Packed) Provider() *integrations.Provider {
	if k.full != nil {
		return k.full.Provider
	}
	return k.provider
}

// Target returns the packed Target, rebuilt in one allocation (plus its
// header and secret lists when it has more than unpackedInline of them):
// its strings share the packed data. Nothing may modify it or what it
// points to. A Packed that holds an unprimed Target returns that one.
func (k Packed) Target() *Target {
	if k.full != nil || k.data == "" {
		return k.full
	}
	b := new(unpacked)
	d := decoder{s: k.data}
	c := &b.conn
	c.ID, c.EnvironmentID = d.int(), d.int()
	c.RefreshAttempts, c.Version = int(d.int()), d.int()
	c.IntegrationKey, c.ConnectionID, c.Provider, c.WebhookURLOverride, c.AuthMode = d.str(), d.str(), d.str(), d.str(), d.str()
	c.CredentialsExpiresAt = d.time(&b.times[0])
	c.LastFetchedAt = d.time(&b.times[1])
	c.LastRefreshFailure = d.time(&b.times[2])
	if t := d.time(&b.times[3]); t != nil {
		c.CreatedAt = *t
	}
	if t := d.time(&b.times[4]); t != nil {
		c.UpdatedAt = *t
	}
	if d.bool() {
		cr := &b.cr
		cr.Type, cr.AccessToken, cr.RefreshToken, cr.OAuthToken, cr.OAuthTokenSecret, cr.Token = d.str(), d.str(), d.str(), d.str(), d.str(), d.str()
		cr.ClientID, cr.ClientSecret, cr.APIKey, cr.Username, cr.Password = d.str(), d.str(), d.str(), d.str(), d.str()
		cr.JWTToken, cr.TokenID, cr.TokenSecret = d.str(), d.str(), d.str()
		cr.ExpiresAt = d.time(&b.times[5])
		cr.ObtainedAt = d.time(&b.times[6])
		if d.bool() {
			b.override.ClientID, b.override.ClientSecret = d.str(), d.str()
			cr.ConfigOverride = &b.override
		}
		c.Credentials = cr
	}
	t := &b.t
	t.Connection, t.Provider = c, k.provider
	t.ClientID, t.ClientSecret, t.PrivateKey = d.str(), d.str(), d.str()

	inj := &b.inj
	inj.signer = k.signer
	if n := int(d.int()); n > 0 {
		inj.header = b.header[:0]
		if n > len(b.header) {
			inj.header = make([]headerField, 0, n)
		}
		nv := 0
		for range n {
			f := headerField{name: d.str()}
			m := int(d.int())
			if m == 1 && nv < len(b.values) {
				b.values[nv] = d.str()
				f.values = b.values[nv : nv+1 : nv+1]
				nv++
			} else {
				f.values = make([]string, m)
				for i := range f.values {
					f.values[i] = d.str()
				}
			}
			inj.header = append(inj.header, f)
		}
	}
	if n := int(d.int()); n > 0 {
		inj.query = make([][2]string, n)
		for i := range inj.query {
			inj.query[i] = [2]string{d.str(), d.str()}
		}
	}
	if n := int(d.int()); n > 0 {
		inj.secrets = b.secrets[:0]
		if n > len(b.secrets) {
			inj.secrets = make([]string, 0, n)
		}
		for range n {
			inj.secrets = append(inj.secrets, d.str())
		}
	}
	u := &b.u
	u.Scheme, u.Opaque, u.Host, u.Path, u.RawPath, u.RawQuery, u.Fragment, u.RawFragment = d.str(), d.str(), d.str(), d.str(), d.str(), d.str(), d.str(), d.str()
	u.ForceQuery, u.OmitHost = d.bool(), d.bool()
	b.base = baseResult{u: u}
	t.injection.Store(inj)
	t.base.Store(&b.base)
	return t
}

// unpackedInline is how many injected headers and secrets an unpacked
// Target holds without allocating lists of its own.
const unpackedInline = 8

// unpacked is a Target rebuilt from a Packed, with what it points to.
type unpacked struct {
	t        Target
	conn     connections.Connection
	cr       connections.Credentials
	override connections.ConfigOverride
	times    [7]time.Time
	inj      injection
	base     baseResult
	u        url.URL
	header   [unpackedInline]headerField
	values   [unpackedInline]string // the values of one-value headers
	secrets  [unpackedInline]string
}

// encoder writes a Packed's data: integers as varints, strings with their
// length first, and times as a tag (0 nil, 1 the zero time, 2 set)
// followed by seconds and nanoseconds.
type encoder struct{ b []byte }

func (e *encoder) ints(vs ...int64) {
	for _, v := range vs {
		e.b = binary.AppendVarint(e.b, v)
	}
}

func (e *encoder) strings(vs ...string) {
	for _, s := range vs {
		e.b = binary.AppendUvarint(e.b, uint64(len(s)))
		e.b = append(e.b, s...)
	}
}

func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) times(ts ...*time.Time) {
	for _, t := range ts {
		switch {
		case t == nil:
			e.b = append(e.b, 0)
		case t.IsZero():
			e.b = append(e.b, 1)
		default:
			e.b = append(e.b, 2)
			e.ints(t.Unix(), int64(t.Nanosecond()))
		}
	}
}

// decoder reads what encoder wrote; its strings are parts of s.
type decoder struct {
	s   string
	off int
}

func (d *decoder) uvarint() uint64 {
	var v uint64
	for shift := 0; ; shift += 7 {
		c := d.s[d.off]
		d.off++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
}

func (d *decoder) int() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) str() string {
	n := int(d.uvarint())
	s := d.s[d.off : d.off+n]
	d.off += n
	return s
}

func (d *decoder) bool() bool {
	c := d.s[d.off]
	d.off++
	return c == 1
}

// time reads a time into *dst and returns dst, or nil for a nil one.
func (d *decoder) time(dst *time.Time) *time.Time {
	tag := d.s[d.off]
	d.off++
	switch tag {
	case 0:
		return nil
	case 1:
		*dst = time.Time{}
	default:
		sec := d.int()
		*dst = time.Unix(sec, d.int()).UTC()
	}
	return dst
}
