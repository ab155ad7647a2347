package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/partnergate/partnergate/internal/freeport"
)

// clusterMasters is the size of -redis-cluster's cluster: the smallest Redis Cluster,
// as plugins/nonce/redistest.StartCluster starts for the store's tests.
const clusterMasters = 3

// startRedisCluster starts clusterMasters throwaway redis-servers on free loopback ports,
// cluster-enabled, without replicas or persistence, each pinned to cpu with a folder of
// its own for nodes.conf, joins them with redis-cli --cluster create and waits until each
// reports cluster_state:ok. On error it stops what it started.
func startRedisCluster(bin, cli, cpu, logDir string) ([]*proc, []string, error) {
	var procs []*proc
	var addrs []string
	fail := func(err error) ([]*proc, []string, error) {
		for _, p := range procs {
			p.stop()
		}
		return nil, nil, err
	}
	for i := 1; i <= clusterMasters; i++ {
		port, err := freeport.Port()
		if err != nil {
			return fail(err)
		}
		busPort, err := freeport.Port()
		if err != nil {
			return fail(err)
		}
		name := fmt.Sprintf("redis-node%d", i)
		dir := filepath.Join(logDir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fail(err)
		}
		p, err := startPinned(name, cpu, logDir, nil, nil, nil, bin, "--port", strconv.Itoa(port),
			"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir,
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(busPort), "--cluster-node-timeout", "2000")
		if err != nil {
			return fail(err)
		}
		procs = append(procs, p)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err := waitPing(p, addr); err != nil {
			return fail(fmt.Errorf("%v (see %s)", err, filepath.Join(logDir, name+".log")))
		}
		addrs = append(addrs, addr)
	}
	out, err := exec.Command(cli, append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		return fail(fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out))
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, addr := range addrs {
		host, port, _ := net.SplitHostPort(addr)
		for {
			info, err := exec.Command(cli, "-h", host, "-p", port, "cluster", "info").Output()
			if err == nil && strings.Contains(string(info), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				return fail(fmt.Errorf("cluster node %s not ok: %v %s", addr, err, info))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return procs, addrs, nil
}

// waitPing waits for the redis-server p at addr to answer PING.
func waitPing(p *proc, addr string) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !p.exited() {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.SetDeadline(time.Now().Add(time.Second))
			c.Write([]byte("PING\r\n"))
			buf := make([]byte, 7)
			n, _ := io.ReadFull(c, buf)
			c.Close()
			if string(buf[:n]) == "+PONG\r\n" {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %s did not answer PING", addr)
}
