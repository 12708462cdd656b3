//go:build !nootel

package telemetry

import (
	"encoding/binary"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// OTLP messages (opentelemetry-proto, collector/{trace,metrics}/v1),
// encoded field by field. Field numbers are those of the .proto files;
// the tests decode what is written here with the generated Go types of
// go.opentelemetry.io/proto/otlp, and telemetry/collectortest sends it to
// the Collector's own OTLP receiver.

// Span flags (trace.proto SpanFlags): the low byte is the W3C trace
// flags; bit 8 says whether bit 9 (the parent, or a link's span, is
// remote) is known.
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// encodeSpans returns an ExportTraceServiceRequest holding spans, grouped
// by resource and instrumentation scope.
func encodeSpans(spans []sdktrace.ReadOnlySpan) []byte {
	type scopeGroup struct {
		scope instrumentation.Scope
		spans []sdktrace.ReadOnlySpan
	}
	type resGroup struct {
		res    *resource.Resource
		scopes []*scopeGroup
	}
	var groups []*resGroup
	for _, s := range spans {
		var rg *resGroup
		for _, g := range groups {
			if sameResource(g.res, s.Resource()) {
				rg = g
				break
			}
		}
		if rg == nil {
			rg = &resGroup{res: s.Resource()}
			groups = append(groups, rg)
		}
		var sg *scopeGroup
		for _, g := range rg.scopes {
			if sameScope(g.scope, s.InstrumentationScope()) {
				sg = g
				break
			}
		}
		if sg == nil {
			sg = &scopeGroup{scope: s.InstrumentationScope()}
			rg.scopes = append(rg.scopes, sg)
		}
		sg.spans = append(sg.spans, s)
	}
	var p pbuf
	for _, rg := range groups {
		p.message(1, func() { // ResourceSpans
			p.message(1, func() { encodeResource(&p, rg.res) })
			for _, sg := range rg.scopes {
				p.message(2, func() { // ScopeSpans
					p.message(1, func() { encodeScope(&p, sg.scope) })
					for _, s := range sg.spans {
						p.message(2, func() { encodeSpan(&p, s) })
					}
					p.string(3, sg.scope.SchemaURL)
				})
			}
			p.string(3, schemaURL(rg.res))
		})
	}
	return p.b
}

func sameResource(a, b *resource.Resource) bool {
	return a == b || (a != nil && b != nil && a.Equal(b))
}

func sameScope(a, b instrumentation.Scope) bool {
	return a.Name == b.Name && a.Version == b.Version && a.SchemaURL == b.SchemaURL &&
		a.Attributes.Equivalent() == b.Attributes.Equivalent()
}

func schemaURL(r *resource.Resource) string {
	if r == nil {
		return ""
	}
	return r.SchemaURL()
}

func encodeResource(p *pbuf, r *resource.Resource) {
	if r == nil {
		return
	}
	encodeAttrs(p, 1, r.Attributes())
}

func encodeScope(p *pbuf, s instrumentation.Scope) {
	p.string(1, s.Name)
	p.string(2, s.Version)
	encodeAttrs(p, 3, s.Attributes.ToSlice())
}

func encodeSpan(p *pbuf, s sdktrace.ReadOnlySpan) {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	p.bytes(1, tid[:])
	p.bytes(2, sid[:])
	p.string(3, sc.TraceState().String())
	flags := uint32(sc.TraceFlags()) | flagHasIsRemote
	if parent := s.Parent(); parent.SpanID().IsValid() {
		psid := parent.SpanID()
		p.bytes(4, psid[:])
		if parent.IsRemote() {
			flags |= flagIsRemote
		}
	}
	p.string(5, s.Name())
	p.uvarint(6, uint64(spanKind(s.SpanKind())))
	p.fixed64(7, unixNano(s.StartTime()))
	p.fixed64(8, unixNano(s.EndTime()))
	encodeAttrs(p, 9, s.Attributes())
	p.uvarint(10, uint64(s.DroppedAttributes()))
	for _, e := range s.Events() {
		p.message(11, func() {
			p.fixed64(1, unixNano(e.Time))
			p.string(2, e.Name)
			encodeAttrs(p, 3, e.Attributes)
			p.uvarint(4, uint64(e.DroppedAttributeCount))
		})
	}
	p.uvarint(12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		p.message(13, func() {
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			p.bytes(1, ltid[:])
			p.bytes(2, lsid[:])
			p.string(3, l.SpanContext.TraceState().String())
			encodeAttrs(p, 4, l.Attributes)
			p.uvarint(5, uint64(l.DroppedAttributeCount))
			lflags := uint32(l.SpanContext.TraceFlags()) | flagHasIsRemote
			if l.SpanContext.IsRemote() {
				lflags |= flagIsRemote
			}
			p.fixed32(6, lflags)
		})
	}
	p.uvarint(14, uint64(s.DroppedLinks()))
	if st := s.Status(); st.Code != codes.Unset || st.Description != "" {
		p.message(15, func() {
			p.string(2, st.Description)
			p.uvarint(3, uint64(statusCode(st.Code)))
		})
	}
	p.fixed32(16, flags)
}

// spanKind maps trace.SpanKind to the OTLP enum (the same numbers, but
// only the five known kinds).
func spanKind(k trace.SpanKind) int {
	switch k {
	case trace.SpanKindInternal, trace.SpanKindServer, trace.SpanKindClient, trace.SpanKindProducer, trace.SpanKindConsumer:
		return int(k)
	}
	return 0
}

// statusCode maps codes.Code to STATUS_CODE_UNSET 0, OK 1, ERROR 2.
func statusCode(c codes.Code) int {
	switch c {
	case codes.Ok:
		return 1
	case codes.Error:
		return 2
	}
	return 0
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(max(0, t.UnixNano()))
}

// encodeAttrs writes each attribute as a KeyValue in field.
func encodeAttrs(p *pbuf, field int, kvs []attribute.KeyValue) {
	for _, kv := range kvs {
		p.message(field, func() {
			p.string(1, string(kv.Key))
			p.message(2, func() { encodeValue(p, kv.Value) })
		})
	}
}

// encodeValue writes an AnyValue's members.
func encodeValue(p *pbuf, v attribute.Value) {
	switch v.Type() {
	case attribute.BOOL:
		p.tag(2, wireVarint)
		if v.AsBool() {
			p.b = append(p.b, 1)
		} else {
			p.b = append(p.b, 0)
		}
	case attribute.INT64:
		p.tag(3, wireVarint)
		p.b = binary.AppendUvarint(p.b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		p.doubleAlways(4, v.AsFloat64())
	case attribute.STRING:
		p.stringAlways(1, v.AsString())
	case attribute.BYTESLICE:
		p.tag(7, wireBytes)
		b := v.AsByteSlice()
		p.b = binary.AppendUvarint(p.b, uint64(len(b)))
		p.b = append(p.b, b...)
	case attribute.BOOLSLICE:
		p.message(5, func() {
			for _, x := range v.AsBoolSlice() {
				p.message(1, func() { encodeValue(p, attribute.BoolValue(x)) })
			}
		})
	case attribute.INT64SLICE:
		p.message(5, func() {
			for _, x := range v.AsInt64Slice() {
				p.message(1, func() { encodeValue(p, attribute.Int64Value(x)) })
			}
		})
	case attribute.FLOAT64SLICE:
		p.message(5, func() {
			for _, x := range v.AsFloat64Slice() {
				p.message(1, func() { encodeValue(p, attribute.Float64Value(x)) })
			}
		})
	case attribute.STRINGSLICE:
		p.message(5, func() {
			for _, x := range v.AsStringSlice() {
				p.message(1, func() { encodeValue(p, attribute.StringValue(x)) })
			}
		})
	case attribute.SLICE:
		p.message(5, func() {
			for _, x := range v.AsSlice() {
				p.message(1, func() { encodeValue(p, x) })
			}
		})
	case attribute.MAP:
		p.message(6, func() { encodeAttrs(p, 1, v.AsMap()) })
	}
	// EMPTY: an AnyValue with no member.
}

// encodeMetrics returns an ExportMetricsServiceRequest holding rm. A data
// type OTLP has no encoding for here (none the SDK produces) is left out
// and counted in skipped.
func encodeMetrics(rm *metricdata.ResourceMetrics) (b []byte, skipped int) {
	var p pbuf
	p.message(1, func() { // ResourceMetrics
		p.message(1, func() { encodeResource(&p, rm.Resource) })
		for _, sm := range rm.ScopeMetrics {
			p.message(2, func() { // ScopeMetrics
				p.message(1, func() { encodeScope(&p, sm.Scope) })
				for _, m := range sm.Metrics {
					if !knownData(m.Data) {
						skipped++
						continue
					}
					p.message(2, func() { encodeMetric(&p, m) })
				}
				p.string(3, sm.Scope.SchemaURL)
			})
		}
		p.string(3, schemaURL(rm.Resource))
	})
	return p.b, skipped
}

func knownData(d metricdata.Aggregation) bool {
	switch d.(type) {
	case metricdata.Gauge[int64], metricdata.Gauge[float64], metricdata.Sum[int64], metricdata.Sum[float64],
		metricdata.Histogram[int64], metricdata.Histogram[float64],
		metricdata.ExponentialHistogram[int64], metricdata.ExponentialHistogram[float64], metricdata.Summary:
		return true
	}
	return false
}

func encodeMetric(p *pbuf, m metricdata.Metrics) {
	p.string(1, m.Name)
	p.string(2, m.Description)
	p.string(3, m.Unit)
	switch d := m.Data.(type) {
	case metricdata.Gauge[int64]:
		p.message(5, func() { numberPoints(p, d.DataPoints) })
	case metricdata.Gauge[float64]:
		p.message(5, func() { numberPoints(p, d.DataPoints) })
	case metricdata.Sum[int64]:
		p.message(7, func() { numberPoints(p, d.DataPoints); sumTail(p, d.Temporality, d.IsMonotonic) })
	case metricdata.Sum[float64]:
		p.message(7, func() { numberPoints(p, d.DataPoints); sumTail(p, d.Temporality, d.IsMonotonic) })
	case metricdata.Histogram[int64]:
		p.message(9, func() { histogramPoints(p, d.DataPoints); p.uvarint(2, temporality(d.Temporality)) })
	case metricdata.Histogram[float64]:
		p.message(9, func() { histogramPoints(p, d.DataPoints); p.uvarint(2, temporality(d.Temporality)) })
	case metricdata.ExponentialHistogram[int64]:
		p.message(10, func() { expPoints(p, d.DataPoints); p.uvarint(2, temporality(d.Temporality)) })
	case metricdata.ExponentialHistogram[float64]:
		p.message(10, func() { expPoints(p, d.DataPoints); p.uvarint(2, temporality(d.Temporality)) })
	case metricdata.Summary:
		p.message(11, func() { summaryPoints(p, d.DataPoints) })
	}
}

func sumTail(p *pbuf, t metricdata.Temporality, monotonic bool) {
	p.uvarint(2, temporality(t))
	p.bool(3, monotonic)
}

// temporality maps to AGGREGATION_TEMPORALITY_DELTA 1, CUMULATIVE 2.
func temporality(t metricdata.Temporality) uint64 {
	switch t {
	case metricdata.DeltaTemporality:
		return 1
	case metricdata.CumulativeTemporality:
		return 2
	}
	return 0
}

// number writes an int64 as sfixed64 in intField, a float64 as double in
// floatField (the members of a value oneof: written even when zero).
func number[N int64 | float64](p *pbuf, intField, floatField int, v N) {
	switch x := any(v).(type) {
	case int64:
		p.fixed64Always(intField, uint64(x))
	case float64:
		p.doubleAlways(floatField, x)
	}
}

func numberPoints[N int64 | float64](p *pbuf, pts []metricdata.DataPoint[N]) {
	for _, dp := range pts {
		p.message(1, func() { // NumberDataPoint
			p.fixed64(2, unixNano(dp.StartTime))
			p.fixed64(3, unixNano(dp.Time))
			number(p, 6, 4, dp.Value)
			exemplars(p, 5, dp.Exemplars)
			encodeAttrs(p, 7, dp.Attributes.ToSlice())
		})
	}
}

func histogramPoints[N int64 | float64](p *pbuf, pts []metricdata.HistogramDataPoint[N]) {
	for _, dp := range pts {
		p.message(1, func() { // HistogramDataPoint
			p.fixed64(2, unixNano(dp.StartTime))
			p.fixed64(3, unixNano(dp.Time))
			p.fixed64(4, dp.Count)
			p.doubleAlways(5, float64(dp.Sum))
			p.packedFixed64(6, dp.BucketCounts)
			p.packedDoubles(7, dp.Bounds)
			exemplars(p, 8, dp.Exemplars)
			encodeAttrs(p, 9, dp.Attributes.ToSlice())
			if v, ok := dp.Min.Value(); ok {
				p.doubleAlways(11, float64(v))
			}
			if v, ok := dp.Max.Value(); ok {
				p.doubleAlways(12, float64(v))
			}
		})
	}
}

func expPoints[N int64 | float64](p *pbuf, pts []metricdata.ExponentialHistogramDataPoint[N]) {
	for _, dp := range pts {
		p.message(1, func() { // ExponentialHistogramDataPoint
			encodeAttrs(p, 1, dp.Attributes.ToSlice())
			p.fixed64(2, unixNano(dp.StartTime))
			p.fixed64(3, unixNano(dp.Time))
			p.fixed64(4, dp.Count)
			p.doubleAlways(5, float64(dp.Sum))
			p.sint32(6, dp.Scale)
			p.fixed64(7, dp.ZeroCount)
			expBuckets(p, 8, dp.PositiveBucket)
			expBuckets(p, 9, dp.NegativeBucket)
			exemplars(p, 11, dp.Exemplars)
			if v, ok := dp.Min.Value(); ok {
				p.doubleAlways(12, float64(v))
			}
			if v, ok := dp.Max.Value(); ok {
				p.doubleAlways(13, float64(v))
			}
			p.double(14, dp.ZeroThreshold)
		})
	}
}

func expBuckets(p *pbuf, field int, b metricdata.ExponentialBucket) {
	p.message(field, func() {
		p.sint32(1, b.Offset)
		p.packedUvarints(2, b.Counts)
	})
}

func summaryPoints(p *pbuf, pts []metricdata.SummaryDataPoint) {
	for _, dp := range pts {
		p.message(1, func() { // SummaryDataPoint
			p.fixed64(2, unixNano(dp.StartTime))
			p.fixed64(3, unixNano(dp.Time))
			p.fixed64(4, dp.Count)
			p.double(5, dp.Sum)
			for _, q := range dp.QuantileValues {
				p.message(6, func() {
					p.double(1, q.Quantile)
					p.double(2, q.Value)
				})
			}
			encodeAttrs(p, 7, dp.Attributes.ToSlice())
		})
	}
}

func exemplars[N int64 | float64](p *pbuf, field int, es []metricdata.Exemplar[N]) {
	for _, e := range es {
		p.message(field, func() { // Exemplar
			p.fixed64(2, unixNano(e.Time))
			number(p, 6, 3, e.Value)
			p.bytes(4, e.SpanID)
			p.bytes(5, e.TraceID)
			encodeAttrs(p, 7, e.FilteredAttributes)
		})
	}
}
