package kvstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// read returns the latest value of key in the bucket (ErrKeyNotFound,
// ErrKeyDeleted as the JetStream client says them). The request is sent
// again when no answer came within half of ctx's time — a read changes
// nothing, and the first request's answer may have been lost with a
// server that went away or a route being re-established — and an answer
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
	inbox := s.nc.NewInbox() // not under the client's request mux, which would get every answer too
	sub, err := s.nc.SubscribeSync(inbox)
	if err != nil {
		return entry{}, err
	}
	defer sub.Unsubscribe()
	if err := s.nc.PublishRequest(subject, inbox, req); err != nil {
		return entry{}, err
	}
	resend := time.Time{} // when to send the request again (zero: no deadline, never)
	if dl, ok := ctx.Deadline(); ok {
		resend = time.Now().Add(time.Until(dl) / 2)
	}
	var unsettledErr error
	var graceEnd time.Time
	for {
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if wait := earliest(resend, graceEnd); !wait.IsZero() {
			wctx, cancel = context.WithDeadline(ctx, wait)
		}
		m, err := sub.NextMsgWithContext(wctx)
		cancel()
		switch {
		case err != nil && ctx.Err() != nil:
			if unsettledErr != nil {
				return entry{}, unsettledErr
			}
			return entry{}, ctx.Err()
		case err != nil && !graceEnd.IsZero() && !time.Now().Before(graceEnd):
			return entry{}, unsettledErr // the leader did not answer after all
		case err != nil && errors.Is(wctx.Err(), context.DeadlineExceeded):
			if !resend.IsZero() && !time.Now().Before(resend) {
				resend = time.Time{}
				s.checkConn() // a stalled connection is left meanwhile
				if err := s.nc.PublishRequest(subject, inbox, req); err != nil {
					return entry{}, err
				}
			}
			continue
		case err != nil:
			return entry{}, err
		}
		if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
			return entry{}, nats.ErrNoResponders
		}
		var r msgGetResponse
		if err := json.Unmarshal(m.Data, &r); err != nil {
			return entry{}, fmt.Errorf("message get: %w", err)
		}
		switch {
		case r.Error != nil && r.Error.ErrorCode == clusterUnavailable:
			if unsettledErr == nil {
				unsettledErr, graceEnd = r.Error, time.Now().Add(unsettledGrace)
			}
			continue // the leader's answer may follow
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
}

// earliest is the earlier of two times, zero ones ignored.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}
