package circuit

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// FuzzDecodeRecord: whatever another process (or a hostile writer sharing
// the NATS bucket) stored, decoding never panics, only version 1 is
// accepted, an accepted record survives a re-encode, and the transitions
// on it neither panic nor produce a lease that binds past two TTLs.
func FuzzDecodeRecord(f *testing.F) {
	k, _ := testKey.Normalize()
	p := params{leaseTTL: 30 * time.Second, parkPoll: 2 * time.Second, releaseWindow: 3 * time.Second,
		maxCooldown: 24 * time.Hour, seed: 3}
	open := p.fail(nil, k, transient(t0.Add(time.Minute)), "a", t0)
	_, probing := p.acquire(open, k, "b", t0.Add(time.Minute))
	for _, r := range []*Record{open, probing, p.progress(probing, k, t0.Add(2*time.Minute))} {
		b, _ := encodeRecord(*r)
		f.Add(b)
	}
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`{"v":1,"lease":{"until":"9999-12-31T23:59:59Z"},"openUntil":"0001-01-01T00:00:01Z"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		if err != nil {
			return
		}
		if r.Version != RecordVersion {
			t.Fatalf("accepted version %d", r.Version)
		}
		again, err := encodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := decodeRecord(again)
		if err != nil || !reflect.DeepEqual(normalizeTimes(r), normalizeTimes(r2)) {
			t.Fatalf("re-encode changed the record:\n%+v\n%+v (%v)", r, r2, err)
		}
		now := t0.Add(time.Hour)
		d, next := p.acquire(&r, k, "fuzz", now)
		if d.Action == Park && d.Until.Before(now) {
			t.Fatalf("parked until the past: %+v", d)
		}
		if next != nil && next.Lease != nil && next.Lease.Until.Sub(now) > 2*p.leaseTTL {
			t.Fatalf("granted a lease binding past two TTLs: %+v", next.Lease)
		}
		p.fail(&r, k, transient(now.Add(time.Minute)), "fuzz", now)
		p.progress(&r, k, now)
		p.refresh(&r, k, "fuzz", now)
		p.release(&r, k, "fuzz", now)
		json.Marshal(r.SnapshotAt(k, now))
	})
}

// normalizeTimes drops monotonic readings and locations so that DeepEqual
// compares instants.
func normalizeTimes(r Record) Record {
	for _, t := range []*time.Time{&r.OpenUntil, &r.OpenedAt, &r.ClosedAt, &r.UpdatedAt} {
		*t = t.UTC()
	}
	if r.Lease != nil {
		l := *r.Lease
		l.Until, l.GrantedAt = l.Until.UTC(), l.GrantedAt.UTC()
		r.Lease = &l
	}
	return r
}
