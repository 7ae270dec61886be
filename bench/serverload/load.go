package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The load generator works like wrk: each of the c clients owns one
// keep-alive TCP connection and has one request in flight at a time. A
// request is written from bytes built in a per-client buffer (the exact
// bytes @nangohq/node sends, see nodeHeaders) and its answer read with
// http.ReadResponse. This costs the bench process a fraction of what
// http.Client costs (no connection pool, no per-connection goroutines), so
// more of the two shared cores go to the processes measured, and every
// request's latency, status and body are checked.

// nodeUserAgent is the User-Agent of @nangohq/node@0.71.10 on Node 20.
const nodeUserAgent = "nango-node-client/0.71.10 (linux/6.1.0; node.js/20.20.2)"

// variant is one kind of request the bench measures.
type variant struct {
	name string
	// addr is the host:port the requests go to.
	addr string
	// request appends the request for connection i to dst.
	request func(dst []byte, i int) []byte
	// check checks the answer for connection i.
	check func(i int, status int, body []byte) error
}

// variants builds the request kinds:
//
//   - get: GET /connections/{id}?provider_config_key=... with
//     credentials, the request of @nangohq/node's getConnection;
//   - proxy: GET /proxy/user with Connection-Id and Provider-Config-Key,
//     the request of @nangohq/node's get({endpoint: '/user', ...});
//   - bare: the proxy's request (the same headers) sent to the bare
//     reverse proxy as /api/user, the path the proxy forwards to;
//   - direct: the same to the upstream itself (not in the default set):
//     the floor of the client and the upstream together.
func variants(server, bare, upstream, apiKey, salt string) map[string]variant {
	auth := "Authorization: Bearer " + apiKey + "\r\n"
	getQuery := "?provider_config_key=" + benchIntegration + "&force_refresh=false&refresh_token=false&refresh_github_app_jwt_token=false"
	proxyReq := func(addr, path string, direct bool) func([]byte, int) []byte {
		return func(b []byte, i int) []byte {
			b = append(b, "GET "+path+" HTTP/1.1\r\n"+
				"Accept: application/json, text/plain, */*\r\n"+
				"User-Agent: "+nodeUserAgent+"\r\n"+
				"Connection-Id: user-"...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, "\r\nProvider-Config-Key: "+benchIntegration+"\r\n"+
				"Base-Url-Override: \r\n"+
				"Nango-Activity-Log-Id: \r\n"...)
			if direct {
				// Straight to the upstream, with the token the proxy adds.
				b = append(b, "Authorization: Bearer "+accessToken(i, salt)+"\r\n"...)
			} else {
				b = append(b, auth...)
			}
			return append(b, "Accept-Encoding: gzip, compress, deflate, br\r\n"+
				"Host: "+addr+"\r\n"+
				"Connection: keep-alive\r\n\r\n"...)
		}
	}
	proxied := func(_ int, status int, body []byte) error {
		if status != http.StatusOK || !bytes.Equal(body, upstreamBody) {
			return fmt.Errorf("status %d, body %.200q", status, body)
		}
		return nil
	}
	return map[string]variant{
		"get": {
			name: "get",
			addr: server,
			request: func(b []byte, i int) []byte {
				b = strconv.AppendInt(append(b, "GET /connections/user-"...), int64(i), 10)
				return append(b, getQuery+" HTTP/1.1\r\n"+
					"Accept: application/json, text/plain, */*\r\n"+
					"Content-Type: application/json\r\n"+
					"User-Agent: "+nodeUserAgent+"\r\n"+
					auth+
					"Accept-Encoding: gzip, compress, deflate, br\r\n"+
					"Host: "+server+"\r\n"+
					"Connection: keep-alive\r\n\r\n"...)
			},
			check: func(i int, status int, body []byte) error {
				if status != http.StatusOK || !bytes.Contains(body, []byte(`"access_token":"`+accessToken(i, salt)+`"`)) {
					return fmt.Errorf("status %d, body %.200q (want connection %d's access token)", status, body, i)
				}
				return nil
			},
		},
		"proxy":  {name: "proxy", addr: server, request: proxyReq(server, "/proxy/user", false), check: proxied},
		"bare":   {name: "bare", addr: bare, request: proxyReq(bare, upstreamPath, false), check: proxied},
		"direct": {name: "direct", addr: upstream, request: proxyReq(upstream, upstreamPath, true), check: proxied},
	}
}

// client is one load-generating connection.
type client struct {
	addr string
	conn net.Conn
	br   *bufio.Reader
	req  []byte
	body bytes.Buffer
	// dials counts the connections this client opened after its first.
	redials int
}

func (c *client) dial() error {
	if c.conn != nil {
		c.conn.Close()
	}
	conn, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
	if err != nil {
		c.conn = nil
		return err
	}
	c.conn = conn
	if c.br == nil {
		c.br = bufio.NewReaderSize(conn, 16<<10)
	} else {
		c.br.Reset(conn)
	}
	return nil
}

// do sends c.req and reads the answer's status and body.
func (c *client) do() (int, []byte, error) {
	if c.conn == nil {
		if err := c.dial(); err != nil {
			return 0, nil, err
		}
		c.redials++
	}
	if _, err := c.conn.Write(c.req); err != nil {
		c.conn.Close()
		c.conn = nil
		return 0, nil, err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.conn.Close()
		c.conn = nil
		return 0, nil, err
	}
	c.body.Reset()
	_, err = io.Copy(&c.body, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil || resp.Close {
		c.conn.Close()
		c.conn = nil
	}
	return resp.StatusCode, c.body.Bytes(), err
}

// loadResult is what the clients of one run saw.
type loadResult struct {
	latencies []time.Duration // of every answered request, sorted
	requests  int             // answered with the expected status and body
	errors    int             // no answer (connection or protocol error)
	bad       int             // answered, but not 2xx or not the expected body
	samples   []string        // the first few errors and bad answers
	redials   int             // connections reopened during the run
	elapsed   time.Duration
}

// drive runs conc clients against v for d, each request for a random one
// of n connections; with d == 0 it sweeps instead: the clients request
// connections 0 to n-1, each once, and stop when all are answered.
func drive(ctx context.Context, v variant, conc, n int, d time.Duration, seed uint64) (loadResult, error) {
	clients := make([]*client, conc)
	for k := range clients {
		c := &client{addr: v.addr}
		if err := c.dial(); err != nil {
			for _, c := range clients[:k] {
				c.conn.Close()
			}
			return loadResult{}, fmt.Errorf("%s: connecting to %s: %w", v.name, v.addr, err)
		}
		clients[k] = c
	}
	type part struct {
		lat       []time.Duration
		ok, fails int
		bad       int
		samples   []string
	}
	parts := make([]part, conc)
	var wg sync.WaitGroup
	var next atomic.Int64 // the next connection of a sweep
	start := time.Now()
	deadline := start.Add(d)
	sweep := d == 0
	for k, c := range clients {
		wg.Go(func() {
			p := &parts[k]
			p.lat = make([]time.Duration, 0, 1024)
			rng := rand.New(rand.NewPCG(seed, uint64(k)))
			for ctx.Err() == nil {
				t0 := time.Now()
				var i int
				if sweep {
					if i = int(next.Add(1) - 1); i >= n {
						return
					}
				} else {
					if !t0.Before(deadline) {
						return
					}
					i = rng.IntN(n)
				}
				c.req = v.request(c.req[:0], i)
				status, body, err := c.do()
				lat := time.Since(t0)
				switch {
				case err != nil:
					p.fails++
					if len(p.samples) < 3 {
						p.samples = append(p.samples, err.Error())
					}
					if c.conn == nil {
						time.Sleep(10 * time.Millisecond) // do not spin on a refused dial
					}
					continue
				case status < 200 || status > 299:
					p.bad++
					if len(p.samples) < 3 {
						p.samples = append(p.samples, fmt.Sprintf("status %d: %.300q", status, body))
					}
				default:
					if err := v.check(i, status, body); err != nil {
						p.bad++
						if len(p.samples) < 3 {
							p.samples = append(p.samples, err.Error())
						}
					} else {
						p.ok++
					}
				}
				p.lat = append(p.lat, lat)
			}
		})
	}
	wg.Wait()
	r := loadResult{elapsed: time.Since(start)}
	for k, p := range parts {
		r.latencies = append(r.latencies, p.lat...)
		r.requests += p.ok
		r.errors += p.fails
		r.bad += p.bad
		r.samples = append(r.samples, p.samples...)
		r.redials += clients[k].redials
		if clients[k].conn != nil {
			clients[k].conn.Close()
		}
	}
	slices.Sort(r.latencies)
	if len(r.samples) > 5 {
		r.samples = r.samples[:5]
	}
	return r, ctx.Err()
}
