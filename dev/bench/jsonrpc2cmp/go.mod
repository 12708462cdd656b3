module github.com/acp-guard/acp-guard/dev/bench/jsonrpc2cmp

go 1.26.0

require (
	github.com/acp-guard/acp-guard v0.0.0
	github.com/sourcegraph/jsonrpc2 v0.2.3
)

require (
	github.com/creack/pty v1.1.24 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/acp-guard/acp-guard => ../../..
