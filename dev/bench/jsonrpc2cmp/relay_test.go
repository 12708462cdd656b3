package jsonrpc2cmp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/acp-guard/acp-guard/transport"
	"github.com/sourcegraph/jsonrpc2"
)

// relay is a one-way agent → client relay under test: frames written to
// agent come out of client.
type relay struct {
	agent  io.WriteCloser // the agent's stdout, as the relay reads it
	client *bufio.Reader  // the client's stdin, as the relay writes it
	stop   func()         // ends the relay and waits for it
	closed <-chan struct{}
}

// startGuard relays with acp-guard's transport.Run: no hooks, the agent on
// AgentPipes (its stdin is discarded; nothing is sent to it).
func startGuard(tb testing.TB) *relay {
	tb.Helper()
	agentOutR, agentOutW := io.Pipe()
	clientInR, clientInW := io.Pipe() // the client's requests: none
	clientOutR, clientOutW := io.Pipe()
	agentExited := make(chan struct{})
	done := make(chan struct{})
	// The relay's goroutine: Run returns when the agent's stdout has ended
	// and it counts as exited (stop closes both).
	go func() {
		defer close(done)
		_, err := transport.Run(context.Background(), transport.Options{
			Agent: &transport.AgentPipes{
				Stdin:  nopWriteCloser{io.Discard},
				Stdout: agentOutR,
				Wait:   func() transport.ExitStatus { <-agentExited; return transport.ExitStatus{} },
			},
			Stdin:  clientInR,
			Stdout: clientOutW,
			Stderr: io.Discard,
		})
		if err != nil {
			tb.Error(err)
		}
		clientOutW.Close()
	}()
	return &relay{
		agent:  agentOutW,
		client: bufio.NewReaderSize(clientOutR, 1<<20),
		closed: done,
		stop: func() {
			agentOutW.Close()
			close(agentExited)
			clientInW.Close()
			go io.Copy(io.Discard, clientOutR) // ends when Run closes it
			<-done
		},
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// startJSONRPC2 relays with two jsonrpc2.Conns: the agent side's handler
// passes every request and notification on through the client side's Conn,
// keeping the id (PickID), the params and the extra top-level members. (A
// response would need a Call on the other side first: the library drops a
// response whose id it did not send.)
func startJSONRPC2(tb testing.TB) *relay {
	tb.Helper()
	agentOutR, agentOutW := io.Pipe()
	clientOutR, clientOutW := io.Pipe()
	ctx := context.Background()
	client := jsonrpc2.NewConn(ctx, jsonrpc2.NewPlainObjectStream(rw{Reader: eofReader{}, WriteCloser: clientOutW}), noHandler{})
	h := jsonrpc2.HandlerWithError(func(ctx context.Context, _ *jsonrpc2.Conn, r *jsonrpc2.Request) (any, error) {
		opts := []jsonrpc2.CallOption{}
		if r.Meta != nil {
			opts = append(opts, jsonrpc2.Meta(r.Meta))
		}
		for _, f := range r.ExtraFields {
			opts = append(opts, jsonrpc2.ExtraField(f.Name, f.Value))
		}
		var params any
		if r.Params != nil {
			params = r.Params
		}
		if r.Notif {
			return nil, client.Notify(ctx, r.Method, params, opts...)
		}
		_, err := client.DispatchCall(ctx, r.Method, params, append(opts, jsonrpc2.PickID(r.ID))...)
		return nil, err
	})
	// Requests would be answered by the handler's return; this comparison
	// sends notifications and reads what reached the client.
	agent := jsonrpc2.NewConn(ctx, jsonrpc2.NewPlainObjectStream(rw{Reader: agentOutR, WriteCloser: nopWriteCloser{io.Discard}}), h)
	// When the agent side's connection closes (its input ended, or a line
	// it could not decode), the client side closes too: the client sees
	// EOF. This goroutine ends then.
	go func() { <-agent.DisconnectNotify(); client.Close() }()
	return &relay{
		agent:  agentOutW,
		client: bufio.NewReaderSize(clientOutR, 1<<20),
		closed: agent.DisconnectNotify(),
		stop: func() {
			agentOutW.Close()
			<-agent.DisconnectNotify()
			client.Close()
		},
	}
}

type rw struct {
	io.Reader
	io.WriteCloser
}

// eofReader is a client that sends nothing: reads block until never.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { select {} }

type noHandler struct{}

func (noHandler) Handle(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) {}

// notification is an agent_message_chunk of text n bytes long.
func notification(n int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":%q}}}}`,
		strings.Repeat("x", n)) + "\n"
}

// skipLine reads past the next line, however long, without keeping it.
func skipLine(r *bufio.Reader) error {
	for {
		_, err := r.ReadSlice('\n')
		if err != bufio.ErrBufferFull {
			return err
		}
	}
}
