package classify

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestDecodePyRepr(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // JSON of the decoded value
		n    int    // bytes consumed: len(in) plus this (what follows the literal)
	}{
		{`{'error': {'message': 'Rate limit', 'type': 'tokens', 'param': None, 'code': 'rate_limit_exceeded'}} trailing`,
			`{"error":{"code":"rate_limit_exceeded","message":"Rate limit","param":null,"type":"tokens"}}`, -len(" trailing")},
		{`{'ok': True, 'n': -1.5e3, 'xs': [1, 'two', (3,)], "dq": "it's"}`, `{"dq":"it's","n":-1.5e3,"ok":true,"xs":[1,"two",[3]]}`, 0},
		{`{'msg': 'a \'quoted\' \\ word\n'}`, `{"msg":"a 'quoted' \\ word\n"}`, 0},
		{`{b'k': u'v'}`, `{"k":"v"}`, 0},
	} {
		v, n, ok := decodePyRepr(tt.in)
		if !ok {
			t.Errorf("%q: not decoded", tt.in)
			continue
		}
		var want any
		if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(v)
		var gotv any
		_ = json.Unmarshal(got, &gotv)
		if wantN := len(tt.in) + tt.n; !reflect.DeepEqual(gotv, want) || n != wantN {
			t.Errorf("%q: got %s (%d bytes), want %s (%d bytes)", tt.in, got, n, tt.want, wantN)
		}
	}
	for _, bad := range []string{`{'a': }`, `{'a' 1}`, `{'a': 'unterminated}`, "{'a': 'line\nbreak'}", `{`, `{1.2.3: 4}`, `[1, 2`} {
		if _, _, ok := decodePyRepr(bad); ok {
			t.Errorf("%q: decoded, want refused", bad)
		}
	}
	deep := ""
	for i := 0; i < 100; i++ {
		deep += "["
	}
	if _, _, ok := decodePyRepr(deep); ok {
		t.Error("unbounded nesting decoded")
	}
}

func FuzzPyRepr(f *testing.F) {
	f.Add(`{'error': {'type': 'overloaded_error', 'message': 'Overloaded'}}`)
	f.Add(`Error code: 429 - {'error': {'code': '429', 'message': "x"}}`)
	f.Fuzz(func(t *testing.T, s string) {
		v, n, ok := decodePyRepr(s)
		if !ok {
			return
		}
		if n <= 0 || n > len(s) {
			t.Fatalf("consumed %d of %d bytes", n, len(s))
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("decoded value does not encode: %v", err)
		}
	})
}
