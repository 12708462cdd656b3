//go:build !parsecount

package jsonscan

// Note marks the start of a parse of b (a frame, or a span of one): a walk
// of an object by this package, or a decode by encoding/json where a frame
// is read. It does nothing unless the program is built with -tags
// parsecount (count_on.go), where a test counts how often each frame is
// parsed; here it compiles to nothing.
func Note[T ~string | ~[]byte](T) {}
