//go:build !nootel

package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The hand-written OTLP encoding, decoded with the generated types of
// the OTLP protocol (the Collector's own receiver takes it too:
// telemetry/collectortest).

func TestEncodeSpans(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	ts, _ := trace.ParseTraceState("vendor=opaque")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: trace.FlagsSampled, TraceState: ts})
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{9, 9, 9, 9, 9, 9, 9, 9}, Remote: true})
	link := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{7, 7, 7, 7, 7, 7, 7, 7}})
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "acp-guard"))
	start := time.Unix(1700000000, 123)
	stub := tracetest.SpanStub{
		Name: "acp.session/prompt", SpanContext: sc, Parent: parent, SpanKind: trace.SpanKindServer,
		StartTime: start, EndTime: start.Add(time.Second),
		Attributes: []attribute.KeyValue{
			attribute.String("s", "text"), attribute.String("empty", ""), attribute.Bool("t", true), attribute.Bool("f", false),
			attribute.Int64("i", -42), attribute.Int64("zero", 0), attribute.Float64("x", 2.5),
			attribute.StringSlice("ss", []string{"a", "b"}), attribute.Int64Slice("is", []int64{1, -1}),
			attribute.BoolSlice("bs", []bool{true}), attribute.Float64Slice("fs", []float64{0.5}),
		},
		Events:            []sdktrace.Event{{Name: "acp_guard.failure", Time: start.Add(time.Millisecond), Attributes: []attribute.KeyValue{attribute.Int("attempt", 1)}, DroppedAttributeCount: 2}},
		Links:             []sdktrace.Link{{SpanContext: link, Attributes: []attribute.KeyValue{attribute.String("k", "v")}}},
		Status:            sdktrace.Status{Code: codes.Error, Description: "failed"},
		DroppedAttributes: 3, DroppedEvents: 4, DroppedLinks: 5,
		Resource:             res,
		InstrumentationScope: instrumentation.Scope{Name: scope, Version: "1.0"},
	}
	other := stub
	other.Name, other.InstrumentationScope = "acp_guard.retry", instrumentation.Scope{Name: "other"}
	other.Parent, other.Status, other.Events, other.Links = trace.SpanContext{}, sdktrace.Status{}, nil, nil
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(encodeSpans(tracetest.SpanStubs{stub, other}.Snapshots()), &req); err != nil {
		t.Fatal(err)
	}
	if len(req.ResourceSpans) != 1 || len(req.ResourceSpans[0].ScopeSpans) != 2 {
		t.Fatalf("got %d resources, want 1 with 2 scopes: %v", len(req.ResourceSpans), &req)
	}
	rs := req.ResourceSpans[0]
	if rs.SchemaUrl != res.SchemaURL() || attrs(rs.Resource.Attributes)["service.name"] != "acp-guard" {
		t.Errorf("resource: %v", rs)
	}
	ss := rs.ScopeSpans[0]
	if ss.Scope.Name != scope || ss.Scope.Version != "1.0" || len(ss.Spans) != 1 || rs.ScopeSpans[1].Scope.Name != "other" {
		t.Fatalf("scopes: %v", rs.ScopeSpans)
	}
	s := ss.Spans[0]
	if hex.EncodeToString(s.TraceId) != tid.String() || !bytes.Equal(s.SpanId, []byte{1, 2, 3, 4, 5, 6, 7, 8}) ||
		!bytes.Equal(s.ParentSpanId, []byte{9, 9, 9, 9, 9, 9, 9, 9}) || s.TraceState != "vendor=opaque" {
		t.Errorf("ids: %v", s)
	}
	if s.Flags != 0x301 || s.Name != stub.Name || s.Kind != tracepb.Span_SPAN_KIND_SERVER ||
		s.StartTimeUnixNano != uint64(start.UnixNano()) || s.EndTimeUnixNano != uint64(start.Add(time.Second).UnixNano()) {
		t.Errorf("span: flags %#x name %q kind %v times %d %d", s.Flags, s.Name, s.Kind, s.StartTimeUnixNano, s.EndTimeUnixNano)
	}
	want := map[string]string{"s": "text", "empty": "", "t": "true", "f": "false", "i": "-42", "zero": "0", "x": "2.5",
		"ss": "[a b]", "is": "[1 -1]", "bs": "[true]", "fs": "[0.5]"}
	if got := attrs(s.Attributes); !maps.Equal(got, want) {
		t.Errorf("attributes: got %v, want %v", got, want)
	}
	if s.DroppedAttributesCount != 3 || s.DroppedEventsCount != 4 || s.DroppedLinksCount != 5 {
		t.Errorf("dropped: %d %d %d", s.DroppedAttributesCount, s.DroppedEventsCount, s.DroppedLinksCount)
	}
	if len(s.Events) != 1 || s.Events[0].Name != "acp_guard.failure" || attrs(s.Events[0].Attributes)["attempt"] != "1" ||
		s.Events[0].DroppedAttributesCount != 2 || s.Events[0].TimeUnixNano != uint64(start.Add(time.Millisecond).UnixNano()) {
		t.Errorf("events: %v", s.Events)
	}
	if len(s.Links) != 1 || !bytes.Equal(s.Links[0].SpanId, []byte{7, 7, 7, 7, 7, 7, 7, 7}) || s.Links[0].Flags != 0x100 || attrs(s.Links[0].Attributes)["k"] != "v" {
		t.Errorf("links: %v", s.Links)
	}
	if s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || s.Status.GetMessage() != "failed" {
		t.Errorf("status: %v", s.Status)
	}
	if o := rs.ScopeSpans[1].Spans[0]; o.ParentSpanId != nil || o.Status != nil || o.Flags != 0x101 {
		t.Errorf("root span: parent %x status %v flags %#x", o.ParentSpanId, o.Status, o.Flags)
	}
}

func TestEncodeMetrics(t *testing.T) {
	t0, t1 := time.Unix(1700000000, 0), time.Unix(1700000060, 0)
	set := attribute.NewSet(attribute.String("error.type", "rate_limited"))
	rm := &metricdata.ResourceMetrics{
		Resource: resource.NewSchemaless(attribute.String("service.name", "acp-guard")),
		ScopeMetrics: []metricdata.ScopeMetrics{{Scope: instrumentation.Scope{Name: scope}, Metrics: []metricdata.Metrics{
			{Name: "c", Description: "a counter", Unit: "1", Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
				DataPoints: []metricdata.DataPoint[int64]{{Attributes: set, StartTime: t0, Time: t1, Value: 0},
					{StartTime: t0, Time: t1, Value: -3, Exemplars: []metricdata.Exemplar[int64]{{Time: t1, Value: 7, SpanID: []byte{1, 1, 1, 1, 1, 1, 1, 1}, TraceID: make([]byte, 16)}}}}}},
			{Name: "g", Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{{Time: t1, Value: 1.5}}}},
			{Name: "h", Unit: "s", Data: metricdata.Histogram[float64]{Temporality: metricdata.DeltaTemporality, DataPoints: []metricdata.HistogramDataPoint[float64]{{
				Attributes: set, StartTime: t0, Time: t1, Count: 3, Bounds: []float64{0.05, 1}, BucketCounts: []uint64{1, 0, 2}, Sum: 0,
				Min: metricdata.NewExtrema(0.0), Max: metricdata.NewExtrema(4.0)}}}},
			{Name: "e", Data: metricdata.ExponentialHistogram[int64]{Temporality: metricdata.CumulativeTemporality, DataPoints: []metricdata.ExponentialHistogramDataPoint[int64]{{
				Time: t1, Count: 4, Sum: 10, Scale: -2, ZeroCount: 1, ZeroThreshold: 0.001,
				PositiveBucket: metricdata.ExponentialBucket{Offset: -1, Counts: []uint64{1, 2}}, NegativeBucket: metricdata.ExponentialBucket{Offset: 3}}}}},
		}}},
	}
	b, skipped := encodeMetrics(rm)
	var req colmetricpb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil || skipped != 0 {
		t.Fatalf("decode: %v (skipped %d)", err, skipped)
	}
	ms := req.ResourceMetrics[0].ScopeMetrics[0].Metrics
	if len(ms) != 4 || attrs(req.ResourceMetrics[0].Resource.Attributes)["service.name"] != "acp-guard" {
		t.Fatalf("metrics: %v", &req)
	}
	sum := ms[0].GetSum()
	if ms[0].Name != "c" || ms[0].Description != "a counter" || ms[0].Unit != "1" || !sum.IsMonotonic ||
		sum.AggregationTemporality != metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE || len(sum.DataPoints) != 2 {
		t.Fatalf("sum: %v", ms[0])
	}
	p0, p1 := sum.DataPoints[0], sum.DataPoints[1]
	if _, isInt := p0.Value.(*metricpb.NumberDataPoint_AsInt); !isInt || p0.GetAsInt() != 0 || attrs(p0.Attributes)["error.type"] != "rate_limited" ||
		p0.StartTimeUnixNano != uint64(t0.UnixNano()) || p0.TimeUnixNano != uint64(t1.UnixNano()) {
		t.Errorf("a zero int point keeps its value member: %v", p0)
	}
	if p1.GetAsInt() != -3 || len(p1.Exemplars) != 1 || p1.Exemplars[0].GetAsInt() != 7 || len(p1.Exemplars[0].SpanId) != 8 {
		t.Errorf("point with exemplar: %v", p1)
	}
	if g := ms[1].GetGauge(); g == nil || g.DataPoints[0].GetAsDouble() != 1.5 {
		t.Errorf("gauge: %v", ms[1])
	}
	h := ms[2].GetHistogram()
	if h == nil || h.AggregationTemporality != metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA {
		t.Fatalf("histogram: %v", ms[2])
	}
	hp := h.DataPoints[0]
	if hp.Count != 3 || hp.Sum == nil || *hp.Sum != 0 || hp.Min == nil || *hp.Min != 0 || *hp.Max != 4 ||
		len(hp.BucketCounts) != 3 || hp.BucketCounts[2] != 2 || len(hp.ExplicitBounds) != 2 || hp.ExplicitBounds[0] != 0.05 {
		t.Errorf("histogram point: %v", hp)
	}
	ep := ms[3].GetExponentialHistogram().GetDataPoints()[0]
	if ep.Count != 4 || ep.GetSum() != 10 || ep.Scale != -2 || ep.ZeroCount != 1 || ep.ZeroThreshold != 0.001 ||
		ep.Positive.Offset != -1 || len(ep.Positive.BucketCounts) != 2 || ep.Positive.BucketCounts[1] != 2 || ep.Negative.Offset != 3 {
		t.Errorf("exponential point: %v", ep)
	}
}

// The poster: URL, headers, gzip; 503 is retried (after the collector's
// Retry-After), 400 is not.
func TestPoster(t *testing.T) {
	var calls atomic.Int32
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, b)
		mu.Unlock()
		switch n := calls.Add(1); {
		case r.URL.Path == "/base/v1/metrics":
			w.WriteHeader(http.StatusBadRequest)
		case n == 1:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":           srv.URL + "/base",
		"OTEL_EXPORTER_OTLP_HEADERS":            "authorization=Bearer%20abc, x-team = a",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS":     "x-only=traces",
		"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip",
	}
	getenv := func(k string) string { return env[k] }
	spans, err := newSpanExporter(getenv)
	if err != nil {
		t.Fatal(err)
	}
	ss := tracetest.SpanStubs{{Name: "s"}}.Snapshots()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard only
	defer cancel()
	if err := spans.ExportSpans(ctx, ss); err != nil {
		t.Fatalf("after one 503: %v", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("got %d requests, want 2 (one retry)", n)
	}
	r := got[1]
	if r.URL.Path != "/base/v1/traces" || r.Header.Get("x-only") != "traces" || r.Header.Get("authorization") != "" ||
		r.Header.Get("Content-Type") != "application/x-protobuf" || r.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("request: %s %v", r.URL.Path, r.Header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(bodies[1]))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(zr)
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &req); err != nil || req.ResourceSpans[0].ScopeSpans[0].Spans[0].Name != "s" {
		t.Errorf("body: %v %v", err, &req)
	}

	metrics, err := newMetricExporter(getenv)
	if err != nil {
		t.Fatal(err)
	}
	before := calls.Load()
	if err := metrics.Export(ctx, &metricdata.ResourceMetrics{}); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("400: got %v, want the status", err)
	}
	if n := calls.Load() - before; n != 1 {
		t.Errorf("400: got %d requests, want 1 (no retry)", n)
	}
	r = got[len(got)-1]
	if r.Header.Get("authorization") != "Bearer abc" || r.Header.Get("x-team") != "a" || r.Header.Get("Content-Encoding") != "" {
		t.Errorf("metrics request headers: %v", r.Header)
	}
	if err := metrics.Shutdown(ctx); err != nil || metrics.Export(ctx, &metricdata.ResourceMetrics{}) == nil {
		t.Errorf("export after shutdown: want an error")
	}
}

func TestPosterSettings(t *testing.T) {
	for _, tt := range []struct {
		env     map[string]string
		url     string
		wantErr string
	}{
		{env: nil, url: "http://localhost:4318/v1/traces"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c.example:4318/"}, url: "https://c.example:4318/v1/traces"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:1"}, url: "http://c:1/"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:1/custom"}, url: "http://c:1/custom"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4318"}, wantErr: "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "x"}, wantErr: "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, wantErr: "OTEL_EXPORTER_OTLP_CERTIFICATE"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY": "/nonexistent/key.pem"}, wantErr: "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY"},
	} {
		p, err := newPoster(func(k string) string { return tt.env[k] }, "TRACES", "/v1/traces")
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: got %v, want an error naming %s", tt.env, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("%v: %v", tt.env, err)
		case p.url != tt.url:
			t.Errorf("%v: url %q, want %q", tt.env, p.url, tt.url)
		}
	}
	for _, tt := range []struct {
		env  string
		kind sdkmetric.InstrumentKind
		want metricdata.Temporality
	}{
		{"", sdkmetric.InstrumentKindCounter, metricdata.CumulativeTemporality},
		{"delta", sdkmetric.InstrumentKindCounter, metricdata.DeltaTemporality},
		{"DELTA", sdkmetric.InstrumentKindUpDownCounter, metricdata.CumulativeTemporality},
		{"lowmemory", sdkmetric.InstrumentKindObservableCounter, metricdata.CumulativeTemporality},
		{"lowmemory", sdkmetric.InstrumentKindHistogram, metricdata.DeltaTemporality},
	} {
		e, err := newMetricExporter(func(k string) string {
			if k == "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE" {
				return tt.env
			}
			return ""
		})
		if err != nil || e.Temporality(tt.kind) != tt.want {
			t.Errorf("preference %q, %v: got %v (%v), want %v", tt.env, tt.kind, e.Temporality(tt.kind), err, tt.want)
		}
	}
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.Key] = anyString(kv.Value)
	}
	return m
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_ArrayValue:
		parts := make([]string, len(x.ArrayValue.Values))
		for i, e := range x.ArrayValue.Values {
			parts[i] = anyString(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return "?"
}
