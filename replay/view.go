package replay

import "os"

// ClientView returns what the client received in a recording: the a2c
// frames the proxy did not suppress, in order, each with its line ending.
func ClientView(events []Event) [][]byte {
	var out [][]byte
	for _, ev := range events {
		if ev.Dir == DirA2C && !ev.Suppressed {
			eol := "\n"
			if ev.CRLF {
				eol = "\r\n"
			}
			out = append(out, append(append([]byte(nil), ev.Bytes()...), eol...))
		}
	}
	return out
}

// ReadFile reads every event of the transcript at path, as ReadAll does;
// a file that cannot be opened is the one error.
func ReadFile(path string) ([]Event, []error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, []error{err}
	}
	defer f.Close()
	return ReadAll(f)
}
