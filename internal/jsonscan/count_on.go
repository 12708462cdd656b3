//go:build parsecount

package jsonscan

// OnParse, in a build with -tags parsecount, is called with the input of
// every parse Note marks. Set it before the parsing goroutines start and
// reset it after they end.
var OnParse func(b []byte)

// Note calls OnParse.
func Note[T ~string | ~[]byte](b T) {
	if OnParse != nil {
		OnParse([]byte(b))
	}
}
