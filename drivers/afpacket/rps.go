package afpacket

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A veth without XDP and without GRO hands each frame its peer sends to
// the backlog queue of the CPU the sender runs on (netif_rx), and the TC
// fast path forwards it from there. A sender that moves between CPUs
// then leaves a flow's frames in two backlogs, which two CPUs drain
// independently: when one of them is late (its softirqs deferred to
// ksoftirqd on a busy machine) the flow arrives reordered. With the
// veth's RPS on (rps_cpus: every CPU the forwarder may run on) the
// kernel queues each frame to the backlog its flow hash picks, so one
// flow is always drained by one CPU, in order: TestTCPNoReorder counted
// 86 to 451 sender-detected reorderings over its runs without it and 0
// with it. The device sets RPS on a veth whose queues have none when it
// runs the fast path in TC and puts the old masks back when it closes;
// a mask an operator set is kept.

// rpsQueue is one RX queue's rps_cpus file and the mask it held.
type rpsQueue struct {
	path string
	old  []byte
}

// setRPS turns RPS on for every RX queue of ifname (ifindex, hardware
// address hw) that has none, with the CPUs this process may run on, and returns
// what to restore. It reads the interface through /sys/class/net, which
// must be this network namespace's (ip netns exec mounts it so): a
// sysfs entry of that name whose index or address is not the device's
// belongs to another namespace and is left alone (an error).
func setRPS(ifname string, ifindex int, hw string) ([]rpsQueue, error) {
	dir := filepath.Join("/sys/class/net", ifname)
	idx, err := os.ReadFile(filepath.Join(dir, "ifindex"))
	if err != nil {
		return nil, err
	}
	addr, err := os.ReadFile(filepath.Join(dir, "address"))
	if err != nil {
		return nil, err
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(string(idx))); n != ifindex || !strings.EqualFold(strings.TrimSpace(string(addr)), hw) {
		return nil, fmt.Errorf("%s is not this namespace's %s (index %s, address %s): run the forwarder with ip netns exec", dir, ifname, bytes.TrimSpace(idx), bytes.TrimSpace(addr))
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	mask := cpuMask(&set)
	qs, err := filepath.Glob(filepath.Join(dir, "queues", "rx-*", "rps_cpus"))
	if err != nil || len(qs) == 0 {
		return nil, fmt.Errorf("%s: no RX queue with rps_cpus (a kernel without CONFIG_RPS)", dir)
	}
	var done []rpsQueue
	for _, q := range qs {
		old, err := os.ReadFile(q)
		if err != nil {
			restoreRPS(done)
			return nil, err
		}
		if strings.Trim(strings.TrimSpace(string(old)), "0,") != "" {
			continue // the operator's
		}
		if err := os.WriteFile(q, []byte(mask), 0); err != nil {
			restoreRPS(done)
			return nil, fmt.Errorf("%s: %w", q, err)
		}
		done = append(done, rpsQueue{path: q, old: bytes.TrimSpace(old)})
	}
	return done, nil
}

// restoreRPS puts back the masks setRPS replaced; a queue whose
// interface has gone meanwhile (its veth deleted) has nothing to restore.
func restoreRPS(qs []rpsQueue) error {
	var first error
	for _, q := range qs {
		if err := os.WriteFile(q.path, q.old, 0); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
			first = err
		}
	}
	return first
}

// cpuMask is set as rps_cpus takes it: hexadecimal 32-bit words, the
// most significant first, separated by commas.
func cpuMask(set *unix.CPUSet) string {
	hi := 0
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			hi = c
		}
	}
	words := make([]string, hi/32+1)
	for w := range words {
		var v uint32
		for b := 0; b < 32; b++ {
			if set.IsSet(w*32 + b) {
				v |= 1 << b
			}
		}
		words[len(words)-1-w] = fmt.Sprintf("%08x", v)
	}
	return strings.Join(words, ",")
}
