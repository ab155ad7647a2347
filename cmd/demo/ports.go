package main

import (
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// portUse is a port run.sh needs, what it is for and how a person moves it.
type portUse struct {
	port     int
	what     string // "the gateway"
	moveWith string // "PARTNERGATE_DEMO_PORT=<port>"
}

// checkPorts stops run.sh, before it starts anything, when one of the ports is in use,
// naming each busy one, what it is for, its holder and how to move it.
func (d *demo) checkPorts(uses ...portUse) error {
	busy := false
	for _, u := range uses {
		if portBusy(u.port) {
			fmt.Fprintf(d.stderr, "run.sh: port %d (%s) is in use by %s: stop it, or choose another port with %s\n", u.port, u.what, portHolder(u.port), u.moveWith)
			busy = true
		}
	}
	if busy {
		fmt.Fprintln(d.stderr, "run.sh: nothing was started")
		return exit(1)
	}
	return nil
}

// portBusy reports whether something listens on port: the loopback address cannot be
// bound, or a connection to it is accepted (a listener on another address of the port).
func portBusy(port int) bool {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return true
	}
	l.Close()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return true
	}
	return false
}

// holder is a process listening on a port.
type holder struct {
	pid  int
	name string
}

var (
	ssUser   = regexp.MustCompile(`\("([^"]*)",pid=([0-9]+)`)
	haveSS   = lookPath("ss")
	haveLsof = lookPath("lsof")
)

func lookPath(tool string) bool {
	_, err := exec.LookPath(tool)
	return err == nil
}

// portPids returns the processes listening on TCP port on any address, as ss or lsof see
// them (only this user's processes show their pid); none when neither is installed.
func portPids(port int) []holder {
	seen := map[holder]bool{}
	switch {
	case haveSS:
		out, _ := exec.Command("ss", "-Hltnp", fmt.Sprintf("sport = :%d", port)).Output()
		for _, m := range ssUser.FindAllStringSubmatch(string(out), -1) {
			pid, _ := strconv.Atoi(m[2])
			seen[holder{pid, m[1]}] = true
		}
	case haveLsof:
		out, _ := exec.Command("lsof", "-nP", fmt.Sprintf("-iTCP:%d", port), "-sTCP:LISTEN", "-Fpc").Output()
		pid := 0
		for _, line := range strings.Split(string(out), "\n") {
			switch {
			case strings.HasPrefix(line, "p"):
				pid, _ = strconv.Atoi(line[1:])
			case strings.HasPrefix(line, "c"):
				seen[holder{pid, line[1:]}] = true
			}
		}
	}
	var hs []holder
	for h := range seen {
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].pid < hs[j].pid })
	return hs
}

// portHolder says what holds port, for a person: "caddy (pid 123)", or why it is unknown.
func portHolder(port int) string {
	var names []string
	for _, h := range portPids(port) {
		names = append(names, fmt.Sprintf("%s (pid %d)", h.name, h.pid))
	}
	switch {
	case len(names) > 0:
		return strings.Join(names, ", ")
	case haveSS || haveLsof:
		return "a process of another user"
	default:
		return "a process that neither ss nor lsof is installed to name"
	}
}

// owns checks, when ss or lsof can name the listeners, that port is held by pid.
func (d *demo) owns(port, pid int, what string) error {
	hs := portPids(port)
	if len(hs) == 0 {
		return nil
	}
	for _, h := range hs {
		if h.pid == pid {
			return nil
		}
	}
	fmt.Fprintf(d.stderr, "run.sh: port %d is held by %s, not by this run's %s (pid %d): stop that process, or choose other ports\n", port, portHolder(port), what, pid)
	return exit(1)
}
