//go:build !nootel

package telemetry_test

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is an OTLP/HTTP collector on 127.0.0.1 that keeps what it is
// sent, decoded.
type receiver struct {
	url     string
	mu      sync.Mutex
	spans   []*tracepb.ResourceSpans
	metrics []*metricpb.ResourceMetrics
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{url: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/traces", func(w http.ResponseWriter, req *http.Request) {
		var m coltracepb.ExportTraceServiceRequest
		if !decode(t, w, req, &m) {
			return
		}
		r.mu.Lock()
		r.spans = append(r.spans, m.ResourceSpans...)
		r.mu.Unlock()
		reply(w, &coltracepb.ExportTraceServiceResponse{})
	})
	mux.HandleFunc("/v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		var m colmetricpb.ExportMetricsServiceRequest
		if !decode(t, w, req, &m) {
			return
		}
		r.mu.Lock()
		r.metrics = append(r.metrics, m.ResourceMetrics...)
		r.mu.Unlock()
		reply(w, &colmetricpb.ExportMetricsServiceResponse{})
	})
	srv := &http.Server{Handler: mux}
	// Serve returns when Close (at cleanup) closes the listener.
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

func decode(t *testing.T, w http.ResponseWriter, req *http.Request, m proto.Message) bool {
	b, err := io.ReadAll(req.Body)
	if err == nil {
		err = proto.Unmarshal(b, m)
	}
	if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
		t.Errorf("receiver: %s %s: %v (content type %q)", req.Method, req.URL.Path, err, req.Header.Get("Content-Type"))
		http.Error(w, "bad request", http.StatusBadRequest)
		return false
	}
	return true
}

func reply(w http.ResponseWriter, m proto.Message) {
	b, _ := proto.Marshal(m)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

// allSpans returns every span received, with its resource's attributes.
func (r *receiver) allSpans() (spans []*tracepb.Span, resources [][]*commonpb.KeyValue) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range r.spans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				spans = append(spans, s)
				resources = append(resources, rs.GetResource().GetAttributes())
			}
		}
	}
	return spans, resources
}

// metric returns the data points of the named metric: sums and
// histograms, flattened to (attributes, value or count).
type point struct {
	attrs    map[string]string
	value    float64   // a sum's value, or a histogram's count
	bounds   []float64 // a histogram's explicit bucket bounds
	resource map[string]string
}

func (r *receiver) metric(name string) []point {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []point
	for _, rm := range r.metrics {
		res := attrMap(rm.GetResource().GetAttributes())
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != name {
					continue
				}
				for _, dp := range m.GetSum().GetDataPoints() {
					out = append(out, point{attrs: attrMap(dp.Attributes), value: float64(dp.GetAsInt()) + dp.GetAsDouble(), resource: res})
				}
				for _, dp := range m.GetHistogram().GetDataPoints() {
					out = append(out, point{attrs: attrMap(dp.Attributes), value: float64(dp.Count), bounds: dp.ExplicitBounds, resource: res})
				}
			}
		}
	}
	return out
}

// everyString returns every string value that arrived (attributes of
// resources, spans, events, data points; names).
func (r *receiver) everyString() []string {
	var out []string
	add := func(kvs []*commonpb.KeyValue) {
		for _, kv := range kvs {
			out = append(out, kv.Key+"="+anyString(kv.Value))
		}
	}
	spans, res := r.allSpans()
	for i, s := range spans {
		add(res[i])
		add(s.Attributes)
		out = append(out, s.Name, s.GetStatus().GetMessage())
		for _, e := range s.Events {
			add(e.Attributes)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rm := range r.metrics {
		add(rm.GetResource().GetAttributes())
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				for _, dp := range m.GetSum().GetDataPoints() {
					add(dp.Attributes)
				}
				for _, dp := range m.GetHistogram().GetDataPoints() {
					add(dp.Attributes)
				}
			}
		}
	}
	return out
}

func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	}
	return v.String()
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.Key] = anyString(kv.Value)
	}
	return m
}
