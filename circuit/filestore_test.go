package circuit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acp-guard/acp-guard/internal/platform"
)

func openFile(t *testing.T, dir string) Store {
	t.Helper()
	s, err := OpenStore("file", Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func raceKey(i int) Key {
	return Key{Namespace: "race", Provider: "p" + strconv.Itoa(i), Scope: "provider"}
}

func TestFileStorePermissionsAndRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "acp-guard")
	s := openFile(t, dir)
	c := newTest(t, s)
	mustFail(t, c, transient(t0.Add(time.Minute)), "a", t0)
	mustAcquire(t, c, "b", t0.Add(time.Second), Park)
	for path, want := range map[string]os.FileMode{
		dir: 0o700, filepath.Dir(dir): 0o700,
		filepath.Join(dir, FileName): 0o600, filepath.Join(dir, LockFileName): 0o600,
	} {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", path, got, want)
		}
	}
	// A second handle (another process, in effect) sees the same circuit.
	c2 := newTest(t, openFile(t, dir))
	mustAcquire(t, c2, "c", t0.Add(time.Minute), Probe)
	recs, err := s.List(ctx)
	if err != nil || len(recs) != 1 || recs[0].Lease.Holder != "c" || recs[0].Version != RecordVersion {
		t.Fatalf("List = %+v, %v", recs, err)
	}
	k, _ := testKey.Normalize()
	if err := s.Delete(ctx, k.ID()); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, c, "b", t0.Add(2*time.Minute), Go)
}

func TestFileStoreRefusesSymlinks(t *testing.T) {
	for _, name := range []string{FileName, LockFileName} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(t.TempDir(), "victim")
			if err := os.WriteFile(target, []byte("keep me"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			c := newTest(t, openFile(t, dir))
			_, ferr := c.Fail(ctx, testKey, transient(t0.Add(time.Minute)), "a", t0)
			if !errors.Is(ferr, ErrStore) || !errors.Is(ferr, platform.ELOOP) {
				t.Fatalf("Fail through a symlinked %s: %v, want ErrStore wrapping ELOOP", name, ferr)
			}
			if b, _ := os.ReadFile(target); string(b) != "keep me" {
				t.Fatalf("symlink target changed: %q", b)
			}
		})
	}
}

func TestFileStoreReplacesACorruptDocumentButNotAForeignOne(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	os.WriteFile(path, []byte("{not json"), 0o600)
	c := newTest(t, openFile(t, dir))
	mustAcquire(t, c, "a", t0, Go) // a corrupt document holds no circuits
	if _, err := c.Fail(ctx, testKey, transient(t0.Add(time.Minute)), "a", t0); err != nil {
		t.Fatalf("Fail over a corrupt file: %v", err)
	}
	mustAcquire(t, c, "b", t0.Add(time.Second), Park)

	foreign := `{"format":"acp-guard.circuits/2","entries":{}}`
	os.WriteFile(path, []byte(foreign), 0o600)
	c = newTest(t, openFile(t, dir))
	if _, err := c.Fail(ctx, testKey, transient(t0.Add(time.Minute)), "a", t0); !errors.Is(err, ErrFormat) {
		t.Fatalf("Fail on a newer format: %v, want ErrFormat", err)
	}
	if b, _ := os.ReadFile(path); string(b) != foreign {
		t.Fatalf("newer-format document overwritten: %s", b)
	}
}

func TestFileStorePrunesOldClosedCircuits(t *testing.T) {
	s := openFile(t, t.TempDir())
	c := newTest(t, s)
	old := Key{Provider: "old", Scope: "provider"}
	c.Fail(ctx, old, transient(t0.Add(time.Minute)), "a", t0)
	c.Progress(ctx, old, t0.Add(time.Minute))
	stillOpen := Key{Provider: "long", Scope: "provider"}
	c.Fail(ctx, stillOpen, transient(t0.Add(24*time.Hour)), "a", t0)
	later := t0.Add(fileRetain + time.Hour)
	c.Fail(ctx, testKey, transient(later.Add(time.Minute)), "a", later)
	recs, _ := s.List(ctx)
	var got []string
	for _, r := range recs {
		got = append(got, r.Key.Provider)
	}
	if strings.Join(got, ",") != "cursor-acp,long" {
		t.Fatalf("after pruning: %v, want the fresh circuit and the one still open", got)
	}
}

// TestFileStoreProbeRaceGoroutines: goroutines with their own handles (one
// flock each, as separate processes have) race for the probe lease of many
// circuits; each circuit gets exactly one probe.
func TestFileStoreProbeRaceGoroutines(t *testing.T) {
	dir := t.TempDir()
	const racers, keys = 12, 20
	setup := newTest(t, openFile(t, dir))
	for k := range keys {
		if _, err := setup.Fail(ctx, raceKey(k), transient(t0), "setup", t0); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	probes := make(map[int][]string)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for r := range racers {
		c := newTest(t, openFile(t, dir))
		wg.Go(func() {
			<-start
			for k := range keys {
				d, err := c.Acquire(ctx, raceKey(k), fmt.Sprintf("racer-%d", r), t0.Add(time.Second))
				if err != nil {
					t.Errorf("racer %d key %d: %v", r, k, err)
					return
				}
				if d.Action == Probe {
					mu.Lock()
					probes[k] = append(probes[k], d.Lease.Holder)
					mu.Unlock()
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for k := range keys {
		if len(probes[k]) != 1 {
			t.Errorf("key %d: probes granted to %v, want exactly one", k, probes[k])
		}
	}
}

// TestFileStoreProbeRaceProcesses: the same race between real OS
// processes (this test binary re-executed), each with its own handle.
func TestFileStoreProbeRaceProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	const procs, keys = 6, 15
	setup := newTest(t, openFile(t, dir))
	for k := range keys {
		setup.Fail(ctx, raceKey(k), transient(t0), "setup", t0)
	}
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bufio.Scanner, procs)
	gates := make([]io.Closer, procs)
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestFileStoreRaceHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), "CIRCUIT_RACE_DIR="+dir,
			"CIRCUIT_RACE_KEYS="+strconv.Itoa(keys), "CIRCUIT_RACE_ID=proc-"+strconv.Itoa(i))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if gates[i], err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { gates[i].Close(); cmd.Process.Kill(); cmd.Wait() })
		cmds[i], outs[i] = cmd, bufio.NewScanner(out)
		// Each helper prints "ready" once its store is open, then waits
		// for its stdin to close, so that all of them race together.
		if !outs[i].Scan() || outs[i].Text() != "ready" {
			t.Fatalf("helper %d did not get ready: %q %v", i, outs[i].Text(), outs[i].Err())
		}
	}
	for _, g := range gates {
		g.Close()
	}
	probes := make(map[string][]string)
	for i := range procs {
		for outs[i].Scan() {
			line := outs[i].Text()
			if key, ok := strings.CutPrefix(line, "probe "); ok {
				probes[key] = append(probes[key], "proc-"+strconv.Itoa(i))
			} else if strings.HasPrefix(line, "error ") {
				t.Errorf("helper %d: %s", i, line)
			}
		}
		if err := cmds[i].Wait(); err != nil {
			t.Errorf("helper %d: %v", i, err)
		}
	}
	for k := range keys {
		if got := probes[strconv.Itoa(k)]; len(got) != 1 {
			t.Errorf("key %d: probes granted to %v, want exactly one", k, got)
		}
	}
}

// TestFileStoreRaceHelper is the body of one racing process of
// TestFileStoreProbeRaceProcesses; it does nothing in a normal run.
func TestFileStoreRaceHelper(t *testing.T) {
	dir := os.Getenv("CIRCUIT_RACE_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	keys, _ := strconv.Atoi(os.Getenv("CIRCUIT_RACE_KEYS"))
	id := os.Getenv("CIRCUIT_RACE_ID")
	c := newTest(t, openFile(t, dir))
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin) // the gate: EOF starts the race
	for k := range keys {
		d, err := c.Acquire(ctx, raceKey(k), id, t0.Add(time.Second))
		switch {
		case err != nil:
			fmt.Printf("error %d: %v\n", k, err)
		case d.Action == Probe:
			fmt.Printf("probe %d\n", k)
		default:
			fmt.Printf("park %d\n", k)
		}
	}
}

// TestFileStoreKeepsItsFormat: testdata/circuits-v1-before.json was
// written by the file store as it was before the stores shared
// internal/kvstore. This store reads it, and the same next
// write — p4 updated at its revision two days later, which prunes the
// closed p1 — gives, byte for byte, the document that store wrote
// (circuits-v1-after.json).
func TestFileStoreKeepsItsFormat(t *testing.T) {
	before, err := os.ReadFile(filepath.Join("testdata", "circuits-v1-before.json"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(filepath.Join("testdata", "circuits-v1-after.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), before, 0o600); err != nil {
		t.Fatal(err)
	}
	s := openFile(t, dir)
	recs, err := s.List(ctx)
	var got []string
	for _, r := range recs {
		got = append(got, r.Key.Provider)
	}
	if err != nil || strings.Join(got, ",") != "p1,p2,p4" {
		t.Fatalf("List = %v, %v; want p1,p2,p4", got, err)
	}
	if l := recs[1].Lease; l == nil || l.Holder != "h/2/g/s/7" || recs[1].CooldownMs != 4000 || recs[1].LastProbe != "h/1/g/s/1" {
		t.Fatalf("p2 = %+v", recs[1])
	}
	k, err := Key{Provider: "p4", Model: "m <beta> & co", Scope: "provider"}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	r, rev, err := s.Get(ctx, k.ID())
	if err != nil || r == nil || rev != 4 || r.Key.Model != "m <beta> & co" || r.Failures != 1 {
		t.Fatalf("Get(p4) = %+v, %d, %v", r, rev, err)
	}
	r.Failures = 2
	r.UpdatedAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(49*time.Hour + time.Minute)
	if err := s.CompareAndSwap(ctx, k.ID(), *r, rev); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, FileName)); string(b) != string(after) {
		t.Fatalf("document after the write:\n%s\nwant (as the earlier store wrote it):\n%s", b, after)
	}
}
