package main

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a child process the harness started: a copier, MM2 or a perf
// tool. It runs in its own process group and dies with the harness
// (Pdeathsig), so nothing outlives a crashed or killed run.
type proc struct {
	name   string
	log    string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // set before exited is closed
}

// procs tracks every running child so one deferred call stops them all.
type procs struct {
	mu   sync.Mutex
	list []*proc
}

// start runs argv with its output in logPath.
func (ps *procs) start(name, logPath string, argv, env []string) (*proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, log: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	ps.mu.Unlock()
	return p, nil
}

// stopAll stops every child still running.
func (ps *procs) stopAll() {
	ps.mu.Lock()
	list := ps.list
	ps.list = nil
	ps.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range list {
		wg.Go(func() { p.stop(10 * time.Second) })
	}
	wg.Wait()
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// copyRun is a running copier as the harness times it: a child process,
// or a task's connectors on the Kafka Connect workers (connectrow.go).
type copyRun interface {
	done() bool     // it has stopped by itself (failed)
	failure() error // why, once done
	cpu() (float64, error)
	rss() (int64, error)
	stop(grace time.Duration)
}

func (p *proc) cpu() (float64, error) { return cpuSeconds(p.pid()) }

func (p *proc) rss() (int64, error) { return peakRSS(p.pid()) }

// done reports whether the process has exited.
func (p *proc) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group and SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if p.done() {
		return
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.exited:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	<-p.exited
}

// failure describes an unexpected exit with the end of the child's log.
func (p *proc) failure() error {
	return fmt.Errorf("%s exited early (%v); last lines of %s:\n%s", p.name, p.err, p.log, tailFile(p.log, 15))
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// cpuSeconds is the user+system CPU time of a running process (all its
// threads), from /proc/<pid>/stat.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields count from ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return float64(ut+st) / clockTicks, nil
}

// peakRSS is the process's high-water resident set size (VmHWM) in bytes.
func peakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmHWM %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// cpuTicks reads the machine's CPU time so far from /proc/stat, in clock
// ticks: the time the hypervisor gave other guests (steal) and all of it.
// ok is false where there is no /proc/stat.
func cpuTicks() (steal, all uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseCPUTicks(line)
}

// parseCPUTicks reads /proc/stat's first line: "cpu" then user, nice,
// system, idle, iowait, irq, softirq and steal (later fields, guest time,
// are already counted in user and nice).
func parseCPUTicks(line string) (steal, all uint64, ok bool) {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, false
	}
	for i, v := range f[1:9] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		all += n
		if i == 7 {
			steal = n
		}
	}
	return steal, all, true
}

// stealSince is the share of the machine's CPU time stolen since the
// reading (steal0, all0), in %; NaN when either reading failed.
func stealSince(steal0, all0 uint64, ok0 bool) float64 {
	steal1, all1, ok1 := cpuTicks()
	if !ok0 || !ok1 || all1 <= all0 {
		return math.NaN()
	}
	return 100 * float64(steal1-steal0) / float64(all1-all0)
}
