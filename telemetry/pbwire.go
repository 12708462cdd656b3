//go:build !nootel

package telemetry

import (
	"encoding/binary"
	"math"
)

// pbuf appends protocol-buffer wire format (the subset OTLP needs):
// varints, fixed 32- and 64-bit numbers, length-delimited strings, bytes
// and nested messages. OTLP messages are encoded with it directly from
// the SDK's spans and metric data (otlpencode.go), so that the binary
// carries neither the protobuf runtime nor the generated OTLP types —
// whose collector packages link gRPC even for OTLP/HTTP.
type pbuf struct{ b []byte }

// Wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

func (p *pbuf) tag(field, wire int) { p.b = binary.AppendUvarint(p.b, uint64(field)<<3|uint64(wire)) }

// uvarint writes a varint field; proto3 leaves a zero value out.
func (p *pbuf) uvarint(field int, v uint64) {
	if v == 0 {
		return
	}
	p.tag(field, wireVarint)
	p.b = binary.AppendUvarint(p.b, v)
}

// int64 writes an int64 field (two's complement varint, as protobuf does).
func (p *pbuf) int64(field int, v int64) { p.uvarint(field, uint64(v)) }

// sint32 writes a zigzag-encoded sint32 field.
func (p *pbuf) sint32(field int, v int32) { p.uvarint(field, uint64(uint32(v<<1)^uint32(v>>31))) }

func (p *pbuf) bool(field int, v bool) {
	if v {
		p.uvarint(field, 1)
	}
}

// fixed64 writes a fixed64 (or sfixed64, or double bits) field.
func (p *pbuf) fixed64(field int, v uint64) {
	if v == 0 {
		return
	}
	p.fixed64Always(field, v)
}

// fixed64Always writes the field even when it is zero: a member of a
// oneof, or an optional field, whose presence is information.
func (p *pbuf) fixed64Always(field int, v uint64) {
	p.tag(field, wireFixed64)
	p.b = binary.LittleEndian.AppendUint64(p.b, v)
}

func (p *pbuf) double(field int, v float64) { p.fixed64(field, math.Float64bits(v)) }

func (p *pbuf) doubleAlways(field int, v float64) { p.fixed64Always(field, math.Float64bits(v)) }

func (p *pbuf) fixed32(field int, v uint32) {
	if v == 0 {
		return
	}
	p.tag(field, wireFixed32)
	p.b = binary.LittleEndian.AppendUint32(p.b, v)
}

func (p *pbuf) string(field int, s string) {
	if s == "" {
		return
	}
	p.stringAlways(field, s)
}

// stringAlways writes the field even when s is empty (a oneof member).
func (p *pbuf) stringAlways(field int, s string) {
	p.tag(field, wireBytes)
	p.b = binary.AppendUvarint(p.b, uint64(len(s)))
	p.b = append(p.b, s...)
}

func (p *pbuf) bytes(field int, b []byte) {
	if len(b) == 0 {
		return
	}
	p.tag(field, wireBytes)
	p.b = binary.AppendUvarint(p.b, uint64(len(b)))
	p.b = append(p.b, b...)
}

// message writes field as a nested message whose body body appends. The
// body is written in place and its length prefix put before it
// afterwards (a copy of the body within the buffer).
func (p *pbuf) message(field int, body func()) {
	p.tag(field, wireBytes)
	start := len(p.b)
	body()
	n := len(p.b) - start
	var pre [binary.MaxVarintLen64]byte
	l := binary.PutUvarint(pre[:], uint64(n))
	p.b = append(p.b, pre[:l]...)
	copy(p.b[start+l:], p.b[start:start+n])
	copy(p.b[start:], pre[:l])
}

// packedFixed64 writes a packed repeated fixed64 (or double) field.
func (p *pbuf) packedFixed64(field int, vs []uint64) {
	if len(vs) == 0 {
		return
	}
	p.tag(field, wireBytes)
	p.b = binary.AppendUvarint(p.b, uint64(8*len(vs)))
	for _, v := range vs {
		p.b = binary.LittleEndian.AppendUint64(p.b, v)
	}
}

// packedDoubles writes a packed repeated double field.
func (p *pbuf) packedDoubles(field int, vs []float64) {
	if len(vs) == 0 {
		return
	}
	p.tag(field, wireBytes)
	p.b = binary.AppendUvarint(p.b, uint64(8*len(vs)))
	for _, v := range vs {
		p.b = binary.LittleEndian.AppendUint64(p.b, math.Float64bits(v))
	}
}

// packedUvarints writes a packed repeated uint64 field.
func (p *pbuf) packedUvarints(field int, vs []uint64) {
	if len(vs) == 0 {
		return
	}
	p.message(field, func() {
		for _, v := range vs {
			p.b = binary.AppendUvarint(p.b, v)
		}
	})
}
