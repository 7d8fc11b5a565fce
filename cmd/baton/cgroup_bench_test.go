package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// replicaCPUEnv gives each replica of BenchmarkReplicaThroughput a fixed
// share of the processor, in cores (e.g. 0.3), as if each ran on a
// small machine of its own; unset, the replicas share the host's cores.
const replicaCPUEnv = "BATON_BENCH_REPLICA_CPU"

// cgroupV1CPU is where cgroup v1 mounts its cpu controller.
const cgroupV1CPU = "/sys/fs/cgroup/cpu"

// cfsPeriod is the scheduler period a budget is counted over, in µs.
const cfsPeriod = 100_000

// replicaCPUBudget is BATON_BENCH_REPLICA_CPU in cores, or 0 when unset.
// A value that is set but not a positive number stops the benchmark:
// it is never run unconstrained by mistake.
func replicaCPUBudget(b *testing.B) float64 {
	b.Helper()
	s := os.Getenv(replicaCPUEnv)
	if s == "" {
		return 0
	}
	cores, err := strconv.ParseFloat(s, 64)
	if err != nil || cores <= 0 || cores*cfsPeriod < 1000 {
		b.Fatalf("%s=%q: want a number of cores of at least 0.01, such as 0.3", replicaCPUEnv, s)
	}
	return cores
}

// cpuBudget is a cpu cgroup (v1) holding one process to a CPU quota.
type cpuBudget struct {
	dir string
	pid int
}

// limitCPU moves the process pid, with all its threads, into a new cpu
// cgroup allowed cores of CPU time per period. The cgroup is removed
// when b ends, after stop has ended the process (an rmdir of a cgroup
// with a task in it fails). Where the cgroup cannot be made — no cgroup
// v1 cpu controller, or not allowed to write it — b stops with why.
func limitCPU(b *testing.B, pid int, cores float64, stop func()) *cpuBudget {
	b.Helper()
	if _, err := os.Stat(filepath.Join(cgroupV1CPU, "cpu.cfs_quota_us")); err != nil {
		if _, v2 := os.Stat("/sys/fs/cgroup/cgroup.controllers"); v2 == nil {
			b.Fatalf("%s: this host has cgroup v2 only; the benchmark supports only cgroup v1's cpu controller at %s", replicaCPUEnv, cgroupV1CPU)
		}
		b.Fatalf("%s: no cgroup v1 cpu controller at %s: %v", replicaCPUEnv, cgroupV1CPU, err)
	}
	dir, err := os.MkdirTemp(cgroupV1CPU, "baton-bench-")
	if err != nil {
		b.Fatalf("%s: make a cpu cgroup (needs root): %v", replicaCPUEnv, err)
	}
	cg := &cpuBudget{dir: dir, pid: pid}
	b.Cleanup(func() {
		stop()
		if err := cg.remove(); err != nil {
			b.Errorf("%s: %v", replicaCPUEnv, err)
		}
	})
	quota := int(cores * cfsPeriod)
	for _, w := range []struct{ file, value string }{
		{"cpu.cfs_period_us", strconv.Itoa(cfsPeriod)},
		{"cpu.cfs_quota_us", strconv.Itoa(quota)},
		{"cgroup.procs", strconv.Itoa(pid)},
	} {
		if err := os.WriteFile(filepath.Join(dir, w.file), []byte(w.value), 0); err != nil {
			b.Fatalf("%s: write %s to %s: %v", replicaCPUEnv, w.value, filepath.Join(dir, w.file), err)
		}
	}
	// The process is in it, as the kernel sees it.
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	want := ":cpu:/" + filepath.Base(dir) + "\n"
	if err != nil || !strings.Contains(string(raw), want) {
		b.Fatalf("%s: process %d is not in %s (err %v):\n%s", replicaCPUEnv, pid, dir, err, raw)
	}
	return cg
}

// throttle is the cgroup's cpu.stat: the periods it had work in, and
// those it spent its quota in before the period ended.
type throttle struct{ periods, throttled int64 }

func (c *cpuBudget) stat(b *testing.B) throttle {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join(c.dir, "cpu.stat"))
	if err != nil {
		b.Fatal(err)
	}
	var t throttle
	for line := range strings.SplitSeq(string(raw), "\n") {
		k, v, _ := strings.Cut(line, " ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "nr_periods":
			t.periods = n
		case "nr_throttled":
			t.throttled = n
		}
	}
	return t
}

// remove deletes the cgroup, once the kernel has let go of its last
// task (it may hold an exited one for a moment).
func (c *cpuBudget) remove() error {
	var err error
	for range 50 {
		if err = os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("remove cpu cgroup %s: %w", c.dir, err)
}

// procCPU is the processor time (user and system) process pid has used,
// with that of its children it has waited for when withChildren.
func procCPU(pid int, withChildren bool) (time.Duration, string, int, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", 0, err
	}
	s := string(raw)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open || end+2 > len(s) {
		return 0, "", 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	name := s[open+1 : end]
	// The fields after the command's name (which may hold spaces): state,
	// ppid, ... utime (14th of the line), stime, cutime, cstime.
	f := strings.Fields(s[end+2:])
	if len(f) < 15 {
		return 0, "", 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	ppid, _ := strconv.Atoi(f[1])
	ticks := int64(0)
	last := 12
	if withChildren {
		last = 14
	}
	for _, v := range f[11 : last+1] {
		n, _ := strconv.ParseInt(v, 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * time.Second / 100, name, ppid, nil // USER_HZ
}

// postgresCPU is the processor time of the Postgres server this test
// binary started (pgtest's): every postgres process descending from
// it, with the backends already ended (counted in their parent).
func postgresCPU() time.Duration {
	entries, _ := os.ReadDir("/proc")
	type proc struct {
		ppid int
		name string
		cpu  time.Duration
	}
	procs := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cpu, name, ppid, err := procCPU(pid, true)
		if err != nil {
			continue // gone meanwhile
		}
		procs[pid] = proc{ppid, name, cpu}
	}
	self := os.Getpid()
	var total time.Duration
	for _, p := range procs {
		if p.name != "postgres" {
			continue
		}
		for up := p.ppid; up > 1; up = procs[up].ppid {
			if up == self {
				total += p.cpu
				break
			}
			if _, ok := procs[up]; !ok {
				break
			}
		}
	}
	return total
}

// selfCPU is this test binary's own processor time: the load driver,
// the pages, the Telegram fake and the model.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
