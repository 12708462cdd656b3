//go:build !nootel

package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// postConn sends OTLP requests to one collector over one HTTP/1.1
// connection, kept open between exports and opened again when the
// collector closes it. It writes the request and reads the response
// with net/http's own wire code (Request.Write, ReadResponse) but not
// its client: http.Transport, with its HTTP/2 client, would add about a
// megabyte to the binary (docs/PERFORMANCE.md) to send one small request
// a minute. HTTPS_PROXY and HTTP_PROXY (NO_PROXY) are honoured: a plain
// request goes to the proxy, an https one through a CONNECT tunnel.
type postConn struct {
	target  *url.URL
	tls     *tls.Config // nil: the defaults (http targets need none)
	timeout time.Duration

	mu sync.Mutex // one export at a time
	c  net.Conn
	br *bufio.Reader
	// viaProxy: c is a connection to an HTTP proxy that takes requests
	// in absolute form (a plain-http target).
	viaProxy bool
}

// do sends one POST of body (already encoded, and compressed when the
// headers say so) and returns the status and the start of the answer.
func (pc *postConn) do(ctx context.Context, header http.Header, body []byte) (*http.Response, error) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	deadline := time.Now().Add(pc.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	reused := pc.c != nil
	resp, err := pc.once(ctx, header, body)
	if err != nil && reused && ctx.Err() == nil {
		// A kept connection the collector had closed meanwhile: once
		// more on a new one.
		resp, err = pc.once(ctx, header, body)
	}
	return resp, err
}

func (pc *postConn) once(ctx context.Context, header http.Header, body []byte) (*http.Response, error) {
	if pc.c == nil {
		if err := pc.dial(ctx); err != nil {
			return nil, err
		}
	}
	// The connection's deadline is the export's; a cancelled export
	// interrupts it at once.
	// The callback gets this connection, not pc.c: it runs on a goroutine
	// of its own once the deadline passes, possibly after a failed
	// exchange has closed the connection and cleared pc.c.
	c := pc.c
	d, _ := ctx.Deadline()
	_ = c.SetDeadline(d)
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req := &http.Request{
		Method: http.MethodPost, URL: pc.target, Host: pc.target.Host, Header: header,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
	}
	write := req.Write
	if pc.viaProxy {
		write = req.WriteProxy
	}
	var resp *http.Response
	err := write(c)
	if err == nil {
		resp, err = http.ReadResponse(pc.br, req)
	}
	if err == nil {
		// The answer is read (to reuse the connection), not decoded: an
		// ExportServiceResponse naming rejected items is not acted on.
		_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if err == nil && resp.Close {
			err = errClosedAfter
		}
	}
	if err != nil {
		pc.close()
		if errors.Is(err, errClosedAfter) {
			return resp, nil
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, err
	}
	return resp, nil
}

var errClosedAfter = errors.New("closed after the answer")

// dial connects to the target, or to its proxy.
func (pc *postConn) dial(ctx context.Context) error {
	addr := hostPort(pc.target)
	proxy, err := http.ProxyFromEnvironment(&http.Request{URL: pc.target})
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	var d net.Dialer
	dialAddr := addr
	if proxy != nil {
		dialAddr = hostPort(proxy)
	}
	c, err := d.DialContext(ctx, "tcp", dialAddr)
	if err != nil {
		return err
	}
	if proxy != nil && proxy.Scheme == "https" {
		c = tls.Client(c, &tls.Config{ServerName: proxy.Hostname(), MinVersion: tls.VersionTLS12})
	}
	br := bufio.NewReader(c)
	pc.viaProxy = proxy != nil && pc.target.Scheme == "http"
	if proxy != nil && pc.target.Scheme == "https" {
		if err := connectTunnel(ctx, c, br, addr, proxy); err != nil {
			c.Close()
			return err
		}
	}
	if pc.target.Scheme == "https" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if pc.tls != nil {
			cfg = pc.tls.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = pc.target.Hostname()
		}
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			tc.Close()
			return err
		}
		c, br = tc, bufio.NewReader(tc)
	}
	pc.c, pc.br = c, br
	return nil
}

// connectTunnel asks an HTTP proxy for a tunnel to addr.
func connectTunnel(ctx context.Context, c net.Conn, br *bufio.Reader, addr string, proxy *url.URL) error {
	d, _ := ctx.Deadline()
	_ = c.SetDeadline(d)
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: addr}, Host: addr, Header: http.Header{}}
	if u := proxy.User; u != nil {
		pw, _ := u.Password()
		req.SetBasicAuth(u.Username(), pw)
		req.Header.Set("Proxy-Authorization", req.Header.Get("Authorization"))
		req.Header.Del("Authorization")
	}
	if err := req.Write(c); err != nil {
		return err
	}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("proxy %s: CONNECT %s: %s", proxy.Host, addr, resp.Status)
	}
	return nil
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

func (pc *postConn) close() {
	if pc.c != nil {
		pc.c.Close()
		pc.c, pc.br = nil, nil
	}
}

// shutdown closes the kept connection.
func (pc *postConn) shutdown() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.close()
}
