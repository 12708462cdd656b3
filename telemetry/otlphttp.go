//go:build !nootel

package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The OTLP/HTTP exporters (http/protobuf): the SDK batches spans and
// collects metrics; these encode them (otlpencode.go) and POST them to
// the collector. They read the standard variables, a signal's own
// (OTEL_EXPORTER_OTLP_TRACES_…) before the general one:
//
//   - ENDPOINT: the general one is a base URL (signals go to /v1/traces
//     and /v1/metrics below it; default http://localhost:4318), a
//     signal's own is used as it is; http:// or https://
//   - HEADERS: key=value pairs separated by commas, values URL-encoded
//   - TIMEOUT: per request, in milliseconds (default 10 s)
//   - COMPRESSION: gzip or none
//   - CERTIFICATE (CA bundle), CLIENT_CERTIFICATE and CLIENT_KEY: PEM files
//   - OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: cumulative
//     (default), delta or lowmemory; …_METRICS_DEFAULT_HISTOGRAM_AGGREGATION:
//     explicit_bucket_histogram (default) or base2_exponential_bucket_histogram
//
// A value they cannot use is an error naming the variable (telemetry then
// stays off, with a warning). A request answered 429, 502, 503 or 504 is
// retried with backoff (or after the Retry-After the collector asks for)
// until the export's context ends; any other failure is returned at once.

const (
	defaultOTLPEndpoint = "http://localhost:4318"
	defaultOTLPTimeout  = 10 * time.Second
	maxRetryWait        = 30 * time.Second
	firstRetryWait      = time.Second
)

// otlpPoster sends encoded requests of one signal.
type otlpPoster struct {
	url     string
	headers http.Header
	gzip    bool
	conn    *postConn
	closed  atomic.Bool
}

// envReader reads OTEL_EXPORTER_OTLP_<SIGNAL>_<NAME>, else
// OTEL_EXPORTER_OTLP_<NAME>, returning the variable's name too.
type envReader struct {
	getenv func(string) string
	signal string // TRACES, METRICS
}

func (e envReader) get(name string) (value, variable string) {
	variable = "OTEL_EXPORTER_OTLP_" + e.signal + "_" + name
	if v := strings.TrimSpace(e.getenv(variable)); v != "" {
		return v, variable
	}
	variable = "OTEL_EXPORTER_OTLP_" + name
	return strings.TrimSpace(e.getenv(variable)), variable
}

// newPoster reads the signal's settings; urlPath is its path below a
// general endpoint (/v1/traces, /v1/metrics).
func newPoster(getenv func(string) string, signal, urlPath string) (*otlpPoster, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	env := envReader{getenv, signal}
	p := &otlpPoster{headers: http.Header{}}
	var err error
	if p.url, err = otlpURL(env, urlPath); err != nil {
		return nil, err
	}
	if v, name := env.get("HEADERS"); v != "" {
		if err := parseHeaders(v, p.headers); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	p.headers.Set("Content-Type", "application/x-protobuf")
	p.headers.Set("User-Agent", "acp-guard OTLP exporter")
	switch v, name := env.get("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		p.gzip = true
		p.headers.Set("Content-Encoding", "gzip")
	default:
		return nil, fmt.Errorf("%s: %q is not gzip or none", name, v)
	}
	timeout := defaultOTLPTimeout
	if v, name := env.get("TIMEOUT"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("%s: %q is not a number of milliseconds", name, v)
		}
		if ms > 0 {
			timeout = time.Duration(ms) * time.Millisecond
		}
	}
	p.conn = &postConn{timeout: timeout}
	if p.conn.target, err = url.Parse(p.url); err != nil {
		return nil, err
	}
	if p.conn.tls, err = tlsConfig(env); err != nil {
		return nil, err
	}
	return p, nil
}

// otlpURL is the signal's URL: its own endpoint as it is (the root path
// when it has none), else urlPath below the general endpoint.
func otlpURL(env envReader, urlPath string) (string, error) {
	own := "OTEL_EXPORTER_OTLP_" + env.signal + "_ENDPOINT"
	v, name := strings.TrimSpace(env.getenv(own)), own
	if v == "" {
		name = "OTEL_EXPORTER_OTLP_ENDPOINT"
		v = strings.TrimSpace(env.getenv(name))
		if v == "" {
			v = defaultOTLPEndpoint
		}
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s: %q is not an http:// or https:// URL", name, v)
	}
	switch {
	case name != own:
		u.Path = path.Join("/", u.Path, urlPath)
	case u.Path == "":
		u.Path = "/"
	}
	return u.String(), nil
}

// parseHeaders reads "key=value,key2=value2" (values URL-encoded).
func parseHeaders(v string, h http.Header) error {
	for _, pair := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t\r\n\"(),/:;<=>?@[\\]{}") {
			return fmt.Errorf("%q is not key=value", strings.TrimSpace(pair))
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return fmt.Errorf("header %s: %w", k, err)
		}
		h.Set(k, dec)
	}
	return nil
}

// tlsConfig builds the TLS settings the variables name (nil: none).
func tlsConfig(env envReader) (*tls.Config, error) {
	ca, caName := env.get("CERTIFICATE")
	cert, certName := env.get("CLIENT_CERTIFICATE")
	key, keyName := env.get("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		b, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caName, err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("%s: %s holds no PEM certificate", caName, ca)
		}
	}
	if cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%s and %s: %w", certName, keyName, err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

var errShutdown = errors.New("otlp exporter: shut down")

// post sends body, retrying while the collector answers that it is
// overloaded or unavailable and ctx lasts.
func (p *otlpPoster) post(ctx context.Context, body []byte) error {
	if p.closed.Load() {
		return errShutdown
	}
	if p.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(body)
		_ = zw.Close()
		body = buf.Bytes()
	}
	wait := firstRetryWait
	for {
		retry, err := p.once(ctx, body)
		if err == nil || retry < 0 {
			return err
		}
		if retry == 0 {
			retry, wait = wait, min(2*wait, maxRetryWait)
		}
		t := time.NewTimer(min(retry, maxRetryWait))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// once makes one request. retry < 0: the error is final; 0: retry after
// the backoff; > 0: retry after that long (the collector's Retry-After).
func (p *otlpPoster) once(ctx context.Context, body []byte) (retry time.Duration, err error) {
	resp, err := p.conn.do(ctx, p.headers, body)
	if err != nil {
		return -1, fmt.Errorf("otlp export to %s: %w", p.url, err)
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusAccepted, http.StatusNoContent:
		return 0, nil
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return retryAfter(resp.Header.Get("Retry-After")), fmt.Errorf("otlp export to %s: %s", p.url, resp.Status)
	}
	if resp.StatusCode/100 == 2 {
		return 0, nil
	}
	return -1, fmt.Errorf("otlp export to %s: %s", p.url, resp.Status)
}

// retryAfter reads a Retry-After header: seconds or an HTTP date (0: none).
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}

func (p *otlpPoster) shutdown() { p.closed.Store(true); p.conn.shutdown() }

// otlpSpanExporter is the OTLP/HTTP span exporter.
type otlpSpanExporter struct{ p *otlpPoster }

func newSpanExporter(getenv func(string) string) (*otlpSpanExporter, error) {
	p, err := newPoster(getenv, "TRACES", "/v1/traces")
	if err != nil {
		return nil, err
	}
	return &otlpSpanExporter{p}, nil
}

func (e *otlpSpanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	return e.p.post(ctx, encodeSpans(spans))
}

func (e *otlpSpanExporter) Shutdown(context.Context) error { e.p.shutdown(); return nil }

// otlpMetricExporter is the OTLP/HTTP metric exporter.
type otlpMetricExporter struct {
	p           *otlpPoster
	temporality sdkmetric.TemporalitySelector
	aggregation sdkmetric.AggregationSelector
}

func newMetricExporter(getenv func(string) string) (*otlpMetricExporter, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	p, err := newPoster(getenv, "METRICS", "/v1/metrics")
	if err != nil {
		return nil, err
	}
	e := &otlpMetricExporter{p: p, temporality: sdkmetric.DefaultTemporalitySelector, aggregation: sdkmetric.DefaultAggregationSelector}
	env := envReader{getenv, "METRICS"}
	switch v, name := env.get("TEMPORALITY_PREFERENCE"); strings.ToLower(v) {
	case "", "cumulative":
	case "delta":
		e.temporality = deltaTemporality
	case "lowmemory":
		e.temporality = lowMemoryTemporality
	default:
		return nil, fmt.Errorf("%s: %q is not cumulative, delta or lowmemory", name, v)
	}
	switch v, name := env.get("DEFAULT_HISTOGRAM_AGGREGATION"); strings.ToLower(v) {
	case "", "explicit_bucket_histogram":
	case "base2_exponential_bucket_histogram":
		e.aggregation = exponentialHistograms
	default:
		return nil, fmt.Errorf("%s: %q is not explicit_bucket_histogram or base2_exponential_bucket_histogram", name, v)
	}
	return e, nil
}

// deltaTemporality: delta for counters and histograms, cumulative for
// up-down counters (the specification's "delta" preference).
func deltaTemporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	switch k {
	case sdkmetric.InstrumentKindUpDownCounter, sdkmetric.InstrumentKindObservableUpDownCounter:
		return metricdata.CumulativeTemporality
	}
	return metricdata.DeltaTemporality
}

// lowMemoryTemporality: delta only for synchronous counters and histograms.
func lowMemoryTemporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	switch k {
	case sdkmetric.InstrumentKindCounter, sdkmetric.InstrumentKindHistogram:
		return metricdata.DeltaTemporality
	}
	return metricdata.CumulativeTemporality
}

func exponentialHistograms(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	if k == sdkmetric.InstrumentKindHistogram {
		return sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}
	}
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e *otlpMetricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return e.temporality(k)
}

func (e *otlpMetricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return e.aggregation(k)
}

func (e *otlpMetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	body, skipped := encodeMetrics(rm)
	err := e.p.post(ctx, body)
	if skipped > 0 {
		err = errors.Join(err, fmt.Errorf("otlp export: %d metrics of a type OTLP/HTTP does not encode here were left out", skipped))
	}
	return err
}

func (e *otlpMetricExporter) ForceFlush(context.Context) error { return nil }

func (e *otlpMetricExporter) Shutdown(context.Context) error { e.p.shutdown(); return nil }
