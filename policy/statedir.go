package policy

// MkdirPrivate creates dir and any missing parents with mode 0700 exactly
// (regardless of umask), leaving existing directories alone. It is the one
// rule for every file acp-guard keeps in its state directory (the attempt
// log here, the circuit store in package circuit).
func MkdirPrivate(dir string) error { return mkdirPrivate(dir) }
