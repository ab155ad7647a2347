package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/partnergate/partnergate/internal/freeport"
)

// niceness is the nice value of every measured process (suite flag -nice): on a machine
// shared with other work, a negative value keeps that work from stealing the pinned cores
// in the middle of a phase. With autogroup scheduling (Linux's default for desktops and
// many VMs) a nice value only ranks processes of one session against each other, so each
// child gets a session of its own and the value is given to that session's autogroup too.
// nice and taskset exec in place, so pids stay the program's.
var niceness int

// proc is a child process pinned to one CPU with taskset.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startPinned runs argv on cpu with GOMAXPROCS=1 (one core, one P: the Go runtime must not
// schedule for cores it is not allowed to use) and its output in logDir/name.log, or its
// standard output in stdout when that is not nil.
func startPinned(name, cpu, logDir string, env []string, stdin io.Reader, stdout io.Writer, argv ...string) (*proc, error) {
	argv = append([]string{"taskset", "-c", cpu}, argv...)
	if niceness != 0 {
		argv = append([]string{"nice", "-n", strconv.Itoa(niceness)}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), "GOMAXPROCS=1"), env...)
	log, err := os.Create(filepath.Join(logDir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdin = stdin
	cmd.Stderr = log
	cmd.Stdout = log
	if stdout != nil {
		cmd.Stdout = stdout
	}
	// A suite that is interrupted or killed takes its children with it: the benchmark must
	// stop by itself and leave nothing running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setsid: niceness != 0}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %v", name, err)
	}
	if niceness != 0 {
		// Best effort: absent without autogroup support, and then not needed.
		os.WriteFile(fmt.Sprintf("/proc/%d/autogroup", cmd.Process.Pid), []byte(strconv.Itoa(niceness)), 0)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks the process to end and kills it if it has not within ten seconds.
func (p *proc) stop() {
	if p == nil || p.exited() {
		return
	}
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// cpuTime is the CPU time (user + system) the process has used so far, from
// /proc/<pid>/stat; taskset execs the program in place, so the pid is the program's.
func (p *proc) cpuTime() (time.Duration, error) {
	return cpuTimeOf(p.cmd.Process.Pid)
}

// clockTicks is USER_HZ, 100 on every Linux platform Go supports.
const clockTicks = 100

func cpuTimeOf(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name in parentheses may hold spaces: fields count from after it.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("unexpected /proc stat format")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, errors.New("unexpected /proc stat format")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("unexpected /proc stat format")
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// startUpstream starts "loadbench upstream" with args and reads the address it prints.
func startUpstream(self, cpu, logDir string, args ...string) (*proc, string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, "", err
	}
	p, err := startPinned("upstream", cpu, logDir, nil, nil, w, append([]string{self, "upstream"}, args...)...)
	w.Close()
	if err != nil {
		r.Close()
		return nil, "", err
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		io.Copy(io.Discard, r)
		r.Close()
	}()
	select {
	case addr, ok := <-line:
		if ok {
			return p, addr, nil
		}
	case <-time.After(10 * time.Second):
	}
	p.stop()
	return nil, "", errors.New("upstream did not report its address")
}

// startRedis starts a throwaway redis-server on a free loopback port, without
// persistence, and waits for it to answer PING.
func startRedis(bin, cpu, logDir string) (*proc, string, error) {
	port, err := freeport.Port()
	if err != nil {
		return nil, "", err
	}
	p, err := startPinned("redis", cpu, logDir, nil, nil, nil, bin, "--port", strconv.Itoa(port),
		"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", logDir)
	if err != nil {
		return nil, "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := waitPing(p, addr); err != nil {
		p.stop()
		return nil, "", fmt.Errorf("%v (see %s)", err, filepath.Join(logDir, "redis.log"))
	}
	return p, addr, nil
}

// waitHTTP polls url until it answers 200, the process exits or the time is up.
func waitHTTP(ctx context.Context, p *proc, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if p.exited() {
			return fmt.Errorf("%s exited: %v", p.name, p.err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer %s", p.name, url)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
