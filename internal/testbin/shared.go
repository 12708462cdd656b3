package testbin

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/acp-guard/acp-guard/internal/platform"
)

// A shared build lives in DIR/KEY/NAME, where DIR is the shared directory
// (sharedDir), KEY a hash of everything the build reads (buildKey) and NAME
// the package's base name. A build happens under an exclusive lock on
// DIR/KEY.lock, into a temporary directory renamed into place, so that
// test processes started together wait for one build instead of each
// compiling and linking the same program, and a build killed half-way
// leaves nothing that looks finished.

// keep is how long an unused shared build is kept.
const keep = 72 * time.Hour

// sharedDir is the directory of shared builds: ACP_GUARD_TEST_CACHE, else
// acp-guard-testbin inside the Go build cache (so that a fresh GOCACHE is
// a cold start for these builds too). "" (ACP_GUARD_TEST_CACHE=off, or
// GOCACHE=off) means no sharing.
func sharedDir() string {
	if d := os.Getenv("ACP_GUARD_TEST_CACHE"); d != "" {
		if d == "off" {
			return ""
		}
		return d
	}
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	gocache := strings.TrimSpace(string(out))
	if err != nil || gocache == "" || gocache == "off" {
		return ""
	}
	return filepath.Join(gocache, "acp-guard-testbin")
}

// buildShared returns the shared build of pkg, building it when no test
// process has yet.
func buildShared(root, dir, pkg string, race bool) (string, error) {
	key, err := buildKey(root, pkg, race)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	entry := filepath.Join(dir, key)
	bin := filepath.Join(entry, filepath.Base(pkg))
	unlock, err := lock(entry + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if st, err := os.Stat(bin); err == nil && st.Mode().IsRegular() && st.Mode()&0o100 != 0 {
		now := time.Now()
		_ = os.Chtimes(entry, now, now) // in use: not pruned
		return bin, nil
	}
	prune(dir)
	tmp, err := os.MkdirTemp(dir, "tmp-")
	if err != nil {
		return "", err
	}
	if err := goBuild(root, pkg, filepath.Join(tmp, filepath.Base(pkg)), race); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	_ = os.RemoveAll(entry) // a half-built entry of an older layout
	if err := os.Rename(tmp, entry); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return bin, nil
}

// lock takes an exclusive flock on path, waiting for its holder.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := platform.LockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = platform.UnlockFile(f)
		f.Close()
	}, nil
}

// prune removes builds (and their lock files) unused for longer than keep
// and temporary directories of builds that died more than an hour ago.
// Removing a lock file another process holds is harmless: that process
// builds an entry nobody else is waiting for.
func prune(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	now := time.Now()
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			continue
		}
		age := now.Sub(info.ModTime())
		switch {
		case strings.HasPrefix(e.Name(), "tmp-") && age > time.Hour:
			os.RemoveAll(filepath.Join(dir, e.Name()))
		case e.IsDir() && !strings.HasPrefix(e.Name(), "tmp-") && age > keep:
			os.RemoveAll(filepath.Join(dir, e.Name()))
			os.Remove(filepath.Join(dir, e.Name()+".lock"))
		}
	}
}

// keyTemplate lists, for every package of the main module that pkg
// depends on, its directory and the files a build of it reads.
const keyTemplate = `{{if .Module}}{{if .Module.Main}}{{.Dir}}|` +
	`{{join .GoFiles ","}},{{join .CgoFiles ","}},{{join .SFiles ","}},{{join .EmbedFiles ","}}{{end}}{{end}}`

// buildKey hashes what a build of pkg depends on: the Go release, target
// and build settings, go.mod and go.sum (which pin every other module),
// the test binary's build tags, and the content of every source and
// embedded file (of that tag set) of the main module's
// packages in pkg's dependency graph. Test files are not part of it.
func buildKey(root, pkg string, race bool) (string, error) {
	h := sha256.New()
	tags := testTags()
	fmt.Fprintf(h, "testbin/2\n%s\n%s/%s\nrace=%v\ntags=%s\npkg=%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, race, tags, pkg)
	for _, k := range []string{"GOFLAGS", "CGO_ENABLED", "GOEXPERIMENT", "GOAMD64", "GOTOOLCHAIN"} {
		fmt.Fprintf(h, "%s=%s\n", k, os.Getenv(k))
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		if err := hashFile(h, root, filepath.Join(root, f)); err != nil {
			return "", err
		}
	}
	args := []string{"list", "-deps", "-f", keyTemplate}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = root
	if !race {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as goBuild builds
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -deps %s: %w\n%s", pkg, err, stderr.Bytes())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		pdir, files, ok := strings.Cut(sc.Text(), "|")
		if !ok {
			continue
		}
		for _, name := range strings.Split(files, ",") {
			if name == "" {
				continue
			}
			if err := hashFile(h, root, filepath.Join(pdir, name)); err != nil {
				return "", err
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// hashFile adds a file's path (relative to root) and content to h.
func hashFile(h io.Writer, root, path string) error {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		rel = path
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	fmt.Fprintf(h, "file %s %d\n", filepath.ToSlash(rel), st.Size())
	_, err = io.Copy(h, f)
	return err
}
