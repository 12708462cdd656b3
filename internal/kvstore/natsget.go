package kvstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A read of a clustered bucket (direct gets off) is a JetStream API
// request that every server receives: the stream's leader answers with
// the value, the others stay silent — except a server that does not know
// the stream's or the cluster's leader (one that rejoined after a
// partition, catching up, or one in the middle of an election), which
// answers at once "JetStream system temporarily unavailable". The client
// library takes the first answer, so one lagging server makes every read
// of the fleet fail while the leader is there and answers. read therefore
// makes the request itself and waits, after such an answer, up to
// unsettledGrace more for the leader's.
const unsettledGrace = 500 * time.Millisecond

// jsMsgGetErrNotFound is the JetStream error of a get with no message
// (the key was never written, or its history is gone).
const jsMsgGetErrNotFound jetstream.ErrorCode = 10037

// kvOperation and markerReason are the headers that mark a deleted or
// purged key (as the JetStream client reads them).
const (
	kvOperation  = "KV-Operation"
	markerReason = "Nats-Marker-Reason"
)

// msgGetResponse is the JetStream API's answer to a message get.
type msgGetResponse struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *struct {
		Sequence uint64 `json:"seq"`
		Header   []byte `json:"hdrs,omitempty"`
		Data     []byte `json:"data,omitempty"`
	} `json:"message,omitempty"`
}

// entry is a value read.
type entry struct {
	value []byte
	rev   uint64
}

// replies is one subscription for the answers to a store's reads, under
// an inbox prefix of its own (not the client's request mux, whose
// wildcard would get every answer too): a read registers a token and
// gets the answers sent to prefix+token. One subscription for the
// store's life, not one per read — each would be announced to every
// other server of the cluster, and withdrawn.
type replies struct {
	mu      sync.Mutex
	prefix  string
	sub     *nats.Subscription
	next    uint64
	waiting map[string]chan *nats.Msg
}

// register returns the reply subject of a new read and its answers;
// done unregisters it.
func (s *NATS) register() (subject string, answers <-chan *nats.Msg, done func(), err error) {
	r := &s.replies
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sub == nil {
		prefix := s.nc.NewInbox() + "."
		sub, err := s.nc.Subscribe(prefix+"*", func(m *nats.Msg) {
			r.mu.Lock()
			ch := r.waiting[m.Subject[len(prefix):]]
			r.mu.Unlock()
			select {
			case ch <- m: // nil (the read is over): dropped
			default:
			}
		})
		if err != nil {
			return "", nil, nil, err
		}
		r.prefix, r.sub, r.waiting = prefix, sub, map[string]chan *nats.Msg{}
	}
	r.next++
	token := strconv.FormatUint(r.next, 36)
	ch := make(chan *nats.Msg, 8) // every server may answer a request, and it may go out twice
	r.waiting[token] = ch
	return r.prefix + token, ch, func() {
		r.mu.Lock()
		delete(r.waiting, token)
		r.mu.Unlock()
	}, nil
}

// read returns the latest value of key in the bucket (ErrKeyNotFound,
// ErrKeyDeleted as the JetStream client says them). The request is sent
// again while no answer comes — a read changes nothing, and a request
// may be lost with a server that went away, a stream's leader that died,
// a server cut off from its cluster or a route being re-established, and
// only one sent after that healed is answered — at each resendAfter of
// what remains of ctx's time, so that a read waited for long (a slow
// store's, up to four timeouts) is answered within about resendEvery of
// the cluster healing, not at its end; and an answer
// "temporarily unavailable" is taken only when the leader's does not
// follow within unsettledGrace (see above). No responders: nobody holds
// JetStream there.
func (s *NATS) read(ctx context.Context, key string) (entry, error) {
	req, err := json.Marshal(struct {
		LastBySubject string `json:"last_by_subj"`
	}{"$KV." + s.o.Bucket + "." + key})
	if err != nil {
		return entry{}, err
	}
	subject := "$JS.API.STREAM.MSG.GET.KV_" + s.o.Bucket
	reply, answers, done, err := s.register()
	if err != nil {
		return entry{}, err
	}
	defer done()
	if err := s.nc.PublishRequest(subject, reply, req); err != nil {
		return entry{}, err
	}
	var resend, grace <-chan time.Time
	next := func() {}
	dl, bounded := ctx.Deadline()
	if bounded {
		if d, ok := resendAfter(time.Until(dl)); ok {
			t := time.NewTimer(d)
			defer func() { t.Stop() }()
			resend = t.C
			next = func() {
				resend = nil
				if d, ok := resendAfter(time.Until(dl)); ok {
					t.Reset(d)
					resend = t.C
				}
			}
		}
	}
	var unsettledErr error
	for {
		var m *nats.Msg
		select {
		case <-ctx.Done():
			if unsettledErr != nil {
				return entry{}, unsettledErr
			}
			return entry{}, ctx.Err()
		case <-grace:
			return entry{}, unsettledErr // the leader did not answer after all
		case <-resend:
			next()
			s.checkConn() // a stalled connection is left meanwhile
			if err := s.nc.PublishRequest(subject, reply, req); err != nil {
				return entry{}, err
			}
			continue
		case m = <-answers:
		}
		e, err := decodeGet(m)
		var unsettled *jetstream.APIError
		if errors.As(err, &unsettled) && unsettled.ErrorCode == clusterUnavailable {
			if unsettledErr == nil {
				unsettledErr = err
				t := time.NewTimer(unsettledGrace)
				defer t.Stop()
				grace = t.C
			}
			continue // the leader's answer may follow
		}
		return e, err
	}
}

// resendAfter is when a read with left of its time and no answer yet is
// sent again: after half of what is left, at most resendEvery — and not
// at all once that is under minResend (the answer to a request sent so
// late would not arrive in time). A read of 2 s is sent at 0, 1, 1.5,
// 1.75 and 1.875 s; one of 8 s at 0, 2, 4, 6, 7 and 7.5 s.
func resendAfter(left time.Duration) (time.Duration, bool) {
	d := min(left/2, resendEvery)
	return d, d >= minResend
}

const (
	resendEvery = 2 * time.Second
	minResend   = 100 * time.Millisecond
)

// decodeGet is one answer to a message get: the entry, or the error it
// carries (the server's own, "temporarily unavailable" included, which
// read weighs against the leader's answer).
func decodeGet(m *nats.Msg) (entry, error) {
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		return entry{}, nats.ErrNoResponders
	}
	var r msgGetResponse
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return entry{}, fmt.Errorf("message get: %w", err)
	}
	switch {
	case r.Error != nil && r.Error.ErrorCode == jsMsgGetErrNotFound:
		return entry{}, jetstream.ErrKeyNotFound
	case r.Error != nil && r.Error.ErrorCode == jetstream.JSErrCodeStreamNotFound:
		return entry{}, jetstream.ErrStreamNotFound // the bucket is gone: bound again (failed)
	case r.Error != nil:
		return entry{}, r.Error
	case r.Message == nil:
		return entry{}, errors.New("message get: an answer without a message")
	}
	e := entry{value: r.Message.Data, rev: r.Message.Sequence}
	if len(r.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(r.Message.Header)
		if err != nil {
			return entry{}, fmt.Errorf("message get: %w", err)
		}
		switch h.Get(kvOperation) {
		case "DEL", "PURGE":
			return e, jetstream.ErrKeyDeleted
		}
		switch h.Get(markerReason) {
		case "MaxAge", "Purge", "Remove":
			return e, jetstream.ErrKeyDeleted
		}
	}
	return e, nil
}
