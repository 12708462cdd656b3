package bench

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Machine describes where the benchmark ran.
type Machine struct {
	CPUs      int    // logical CPUs usable by this process
	CPUModel  string // "model name" from /proc/cpuinfo
	GoVersion string // of the benchmark binary (the binaries are built by the same toolchain)
	OS, Arch  string
}

// ThisMachine reads the description of the current machine.
func ThisMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPUModel = cpuModel(b)
	}
	return m
}

// cpuModel returns the first "model name" of a /proc/cpuinfo file.
func cpuModel(cpuinfo []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func (m Machine) String() string {
	model := m.CPUModel
	if model == "" {
		model = "unknown CPU"
	}
	return model + ", " + strconv.Itoa(m.CPUs) + " CPUs, " + m.GoVersion + " " + m.OS + "/" + m.Arch
}
