package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/internal/netns"
)

// The site router topology (addresses as configs/site-router.toml says):
//
//	lan   (eth0.10 192.168.10.10 2001:db8:10::10) ─┐
//	g1    (eth0.20 192.168.20.20 2001:db8:20::20) ─┼─ sw: bridge ── trunk ═ lan0 [fwd] wan0 ── (eth0 203.0.113.2 2001:db8:2::2) out
//	g2    (eth0.20 192.168.20.21 2001:db8:20::21) ─┘
//
// The inside hosts have static IPv6 addresses and take their IPv6
// default route (and a SLAAC address) from the router's advertisements;
// the outside host routes the two inside /64s to the router.
//
// Each host is an ordinary Linux host with a VLAN interface on its eth0
// (ip link add link eth0 name eth0.10 type vlan id 10); sw is a plain
// Linux bridge that carries their tagged frames to the trunk. The
// forwarder sees the tags: its VLANDecap/VLANEncap pairs are the VLANs'
// sub-interfaces.

const (
	srLANHost = "192.168.10.10"
	srGuest1  = "192.168.20.20"
	srGuest2  = "192.168.20.21"
	srLANGW   = "192.168.10.1"
	srGuestGW = "192.168.20.1"
	srPub     = "203.0.113.1"
	srOutside = "203.0.113.2"

	srLANHost6 = "2001:db8:10::10"
	srGuest16  = "2001:db8:20::20"
	srGuest26  = "2001:db8:20::21"
	srLANGW6   = "2001:db8:10::1"
	srGuestGW6 = "2001:db8:20::1"
	srWAN6     = "2001:db8:2::1"
	srOutside6 = "2001:db8:2::2"
)

type siteTopo struct {
	env                  *netns.Env
	fwd, sw, lan, g1, g2 *netns.NS
	ot                   *netns.NS
	bin, config          string
	proc                 *netns.Proc
}

func newSiteTopo(t *testing.T) *siteTopo {
	requireAll(t)
	env := netns.New(t)
	config, err := filepath.Abs("../../../configs/site-router.toml")
	if err != nil {
		t.Fatal(err)
	}
	tp := &siteTopo{env: env, fwd: env.NS("srfwd"), sw: env.NS("srsw"), lan: env.NS("srlan"),
		g1: env.NS("srg1"), g2: env.NS("srg2"), ot: env.NS("srout"), bin: forwarderBin(t), config: config}
	env.Veth(tp.fwd, "lan0", tp.sw, "trunk", 1)
	env.Veth(tp.fwd, "wan0", tp.ot, "eth0", 1)
	tp.sw.MustRun("ip", "link", "add", "br0", "type", "bridge")
	tp.sw.MustRun("ip", "link", "set", "trunk", "master", "br0")
	// The forwarder reads raw frames (AF_XDP): the tag must be in the
	// frame, not in the veth's metadata.
	tp.sw.MustRun("ethtool", "-K", "trunk", "txvlan", "off")
	for i, h := range []struct {
		ns               *netns.NS
		vid, addr, addr6 string
		gw               string
	}{{tp.lan, "10", srLANHost, srLANHost6, srLANGW}, {tp.g1, "20", srGuest1, srGuest16, srGuestGW}, {tp.g2, "20", srGuest2, srGuest26, srGuestGW}} {
		port := fmt.Sprintf("p%d", i)
		env.Veth(tp.sw, port, h.ns, "eth0", 1)
		tp.sw.MustRun("ip", "link", "set", port, "master", "br0")
		vif := vlanHost(t, h.ns, h.vid)
		h.ns.Addr(vif, h.addr+"/24")
		h.ns.Route("default", "via", h.gw)
		// IPv6: a static address (no duplicate detection to wait for);
		// the default route comes from the router's advertisements.
		// (The slash form: a VLAN interface's name, eth0.10, has a dot.)
		h.ns.MustRun("sysctl", "-qw", "net/ipv6/conf/"+vif+"/accept_ra=2")
		h.ns.MustRun("ip", "-6", "addr", "add", h.addr6+"/64", "dev", vif, "nodad")
		// veth leaves TCP/UDP checksums to "hardware" (see newTopo).
		h.ns.MustRun("ethtool", "-K", "eth0", "tx", "off")
		if vif != "eth0" {
			h.ns.MustRun("ethtool", "-K", vif, "tx", "off")
		}
	}
	tp.sw.Up("br0")
	tp.ot.Addr("eth0", srOutside+"/24")
	tp.ot.MustRun("ip", "-6", "addr", "add", srOutside6+"/64", "dev", "eth0", "nodad")
	for _, p := range []string{"2001:db8:10::/64", "2001:db8:20::/64"} {
		tp.ot.MustRun("ip", "-6", "route", "add", p, "via", srWAN6)
	}
	tp.ot.MustRun("ethtool", "-K", "eth0", "tx", "off")
	return tp
}

// start runs the contract config in fwd (nice -20, as a router's data
// plane runs: see qosStart) and waits until every host pings its gateway.
func (tp *siteTopo) start(t *testing.T) {
	t.Helper()
	p := tp.fwd.Start("nice", "-n", "-20", tp.bin, "run", "-config", tp.config, "-quiet")
	tp.proc = p
	deadline := time.Now().Add(20 * time.Second)
	for _, probe := range []struct {
		ns  *netns.NS
		dst string
	}{{tp.lan, srLANGW}, {tp.g1, srGuestGW}, {tp.g2, srGuestGW}, {tp.ot, srPub},
		{tp.lan, srLANGW6}, {tp.g1, srGuestGW6}, {tp.g2, srGuestGW6}, {tp.ot, srWAN6}} {
		for {
			select {
			case <-p.Done():
				t.Fatalf("forwarder exited at start: %v\n%s", p.Wait(0), p.Output())
			default:
			}
			if _, err := probe.ns.Run("ping", "-c1", "-W1", probe.dst); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s gets no answer to ping %s within 20 s:\n%s", probe.ns.Name, probe.dst, p.Output())
			}
		}
	}
	t.Cleanup(func() {
		out := (&topo{}).stop(t, p)
		if t.Failed() {
			t.Logf("forwarder output:\n%s", out)
		}
	})
}

// element sums a named element's packets over workers.
func (tp *siteTopo) element(t *testing.T, name string) uint64 {
	var n uint64
	for _, e := range (&topo{fwd: tp.fwd}).snapshot(t).Elements {
		if e.Element == name {
			n += e.Packets
		}
	}
	return n
}

// refused checks that curl from ns to url fails and that the attempt was
// discarded by the router's filter (fwdrop), not lost on the way.
func (tp *siteTopo) refused(t *testing.T, what string, ns *netns.NS, url string) {
	t.Helper()
	before := tp.element(t, "fwdrop")
	if out, err := ns.Run("curl", "-sf", "--max-time", "2", url); err == nil {
		t.Errorf("%s: connected: %q", what, out)
	}
	if d := tp.element(t, "fwdrop") - before; d < 1 {
		t.Errorf("%s: fwdrop counted %d packets during the attempt, want the SYN and its retransmissions", what, d)
	}
}

// TestSiteRouter: configs/site-router.toml as shipped (two workers)
// between ordinary hosts on VLAN interfaces behind a trunk: ping and curl
// through the NAT from both VLANs, the LAN reaching a guest but not the
// other way, no new connection from the WAN; the same over IPv6 (routed,
// not translated), with each VLAN's router advertisements giving its
// hosts their default route and their own prefix only; and each guest
// host held to 20 Mbit/s each way (UDP, iperf3; TCP through a policer
// settles below its rate, see benchmarks/qos.md), all of a host's packets
// metered on one worker (the trunk's host_affinity).
func TestSiteRouter(t *testing.T) {
	netns.RequireTool(t, "curl")
	tp := newSiteTopo(t)
	tp.start(t)

	t.Run("ping", func(t *testing.T) {
		pingOK(t, tp.lan, srLANGW)
		pingOK(t, tp.g1, srGuestGW)
		pingOK(t, tp.lan, srOutside)
		pingOK(t, tp.g1, srOutside)
		pingOK(t, tp.lan, srGuest1) // LAN -> guest: allowed
	})

	t.Run("masqueraded curl", func(t *testing.T) {
		const body = "outside web server\n"
		log := serveHTTP(t, tp.ot, net.JoinHostPort(srOutside, "8080"), body)
		natCurl(t, tp.lan, "http://"+srOutside+":8080/", body)
		natCurl(t, tp.g1, "http://"+srOutside+":8080/", body)
		onlyHost(t, "masquerade", log, srPub)
	})

	t.Run("lan to guest", func(t *testing.T) {
		log := serveHTTP(t, tp.g1, net.JoinHostPort(srGuest1, "81"), "guest\n")
		natCurl(t, tp.lan, "http://"+srGuest1+":81/", "guest\n")
		onlyHost(t, "lan to guest (routed, not translated)", log, srLANHost)
	})

	t.Run("guest to lan refused", func(t *testing.T) {
		serveHTTP(t, tp.lan, net.JoinHostPort(srLANHost, "81"), "lan\n")
		tp.refused(t, "guest -> LAN", tp.g1, "http://"+srLANHost+":81/")
		pingOK(t, tp.g1, srOutside) // the guest still reaches out
	})

	t.Run("wan inbound refused", func(t *testing.T) {
		tp.ot.MustRun("ip", "route", "replace", "192.168.0.0/16", "via", srPub)
		defer tp.ot.Run("ip", "route", "del", "192.168.0.0/16")
		serveHTTP(t, tp.g2, net.JoinHostPort(srGuest2, "81"), "guest 2\n")
		tp.refused(t, "WAN -> guest", tp.ot, "http://"+srGuest2+":81/")
		tp.refused(t, "WAN -> LAN", tp.ot, "http://"+srLANHost+":82/")
	})

	t.Run("router advertisements", func(t *testing.T) { siteRA(t, tp) })

	t.Run("ping6", func(t *testing.T) {
		pingOK(t, tp.lan, srLANGW6)
		pingOK(t, tp.g1, srGuestGW6)
		pingOK(t, tp.g2, srGuestGW6)
		pingOK(t, tp.lan, srOutside6)
		pingOK(t, tp.g1, srOutside6)
		pingOK(t, tp.g2, srOutside6)
		pingOK(t, tp.lan, srGuest16) // LAN -> guest: allowed
	})

	t.Run("curl6", func(t *testing.T) {
		const body = "outside web server, IPv6\n"
		log := serveHTTP6(t, tp.ot, net.JoinHostPort(srOutside6, "8080"), body)
		url := "http://[" + srOutside6 + "]:8080/"
		for _, h := range []struct {
			ns   *netns.NS
			addr string
		}{{tp.lan, srLANHost6}, {tp.g1, srGuest16}, {tp.g2, srGuest26}} {
			before := len(log.hosts())
			natCurl6(t, h.ns, h.addr, url, body)
			if hs := log.hosts(); len(hs) != before+1 || hs[len(hs)-1] != h.addr {
				t.Errorf("curl from %s: the server saw %v, want %s last (routed, not translated)", h.ns.Name, hs, h.addr)
			}
		}
		glog := serveHTTP6(t, tp.g1, net.JoinHostPort(srGuest16, "81"), "guest\n")
		natCurl6(t, tp.lan, srLANHost6, "http://["+srGuest16+"]:81/", "guest\n")
		onlyHost(t, "lan to guest over IPv6", glog, srLANHost6)
	})

	t.Run("guest to lan refused (IPv6)", func(t *testing.T) {
		serveHTTP6(t, tp.lan, net.JoinHostPort(srLANHost6, "81"), "lan\n")
		tp.refused(t, "guest -> LAN (IPv6)", tp.g1, "http://["+srLANHost6+"]:81/")
		pingOK(t, tp.g1, srOutside6)
	})

	t.Run("wan inbound refused (IPv6)", func(t *testing.T) {
		serveHTTP6(t, tp.g2, net.JoinHostPort(srGuest26, "82"), "guest 2\n")
		tp.refused(t, "WAN -> guest (IPv6)", tp.ot, "http://["+srGuest26+"]:82/")
		tp.refused(t, "WAN -> LAN (IPv6)", tp.ot, "http://["+srLANHost6+"]:82/")
	})

	t.Run("bad tags", func(t *testing.T) { siteBadTags(t, tp) })

	t.Run("guest rate", func(t *testing.T) {
		netns.RequireTool(t, "iperf3")
		siteRates(t, tp)
	})
}

// siteRates: UDP offered at twice the limit from a guest host, then to
// it, then from two guest hosts at once: the policers pass each host's
// 20 Mbit/s within 5% (what they passed over the 10 s, at the IP level,
// less each meter's burst), and no stream receives more than the limit.
// The senders pace with a tbf qdisc (see TestQoSPolicer: a sender that
// waits for its CPU sends in bursts a policer cuts), all hosts run at
// nice -10 (qosPriority) below the forwarder's -20.
func siteRates(t *testing.T, tp *siteTopo) {
	for _, port := range []string{"5201", "5202"} {
		tp.ot.Start("iperf3", "-s", "-J", "-B", srOutside, "-p", port)
	}
	qosPriority(t, tp.g1, tp.g2, tp.ot)
	pace := func(ns *netns.NS, rate string) {
		ns.MustRun("tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", rate, "burst", "3028", "latency", "100ms")
	}
	unpace := func(ns *netns.NS) { ns.MustRun("tc", "qdisc", "del", "dev", "eth0", "root") }
	green := func() uint64 { return counter((&topo{fwd: tp.fwd}).snapshot(t), "Policer", "green") }
	run := func(ns *netns.NS, port, src string, args ...string) (float64, iperfResult) {
		full := []string{"-c", srOutside, "-p", port, "-B", src, "-J", "--get-server-output", "--connect-timeout", "3000",
			"-t", qosSeconds, "-u", "-l", "1400", "-w", "4M"}
		full = append(full, args...)
		reverse := strings.Contains(strings.Join(args, " "), "-R")
		var r iperfResult
		for try := 0; try < 20; try++ {
			r = runIperf(ns, 40*time.Second, reverse, full)
			if r.err == "" || len(r.recv) > 0 {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if r.err != "" {
			t.Fatalf("iperf3 %v: %s\n%.2000s", args, r.err, r.out)
		}
		return r.pps * qosUDPLen * 8 * qosUDPIP, r
	}
	pid := tp.proc.Cmd.Process.Pid
	phase := func(what string, meters float64, streams func() ([]float64, []iperfResult)) {
		g0, w0 := green(), runqWait(pid)
		got, runs := streams()
		waited := runqWait(pid) - w0
		passed := float64(green()-g0) * (qosUDPLen + 28) * 8 / 10
		want := meters * (qosRate + 250e3*8/10) // the rate plus each meter's burst, over 10 s
		load, _ := os.ReadFile("/proc/loadavg")
		t.Logf("site: %s: the policers passed %.2f Mbit/s (%.3f of %.2f); load %s", what, passed/1e6, passed/want, want/1e6, strings.Fields(string(load))[0])
		for i, ip := range got {
			qosLog(t, fmt.Sprintf("site %s, stream %d", what, i), ip, runs[i])
			if ip > 1.05*qosRate {
				t.Errorf("%s: stream %d received %.2f Mbit/s, beyond the 20 Mbit/s limit", what, i, ip/1e6)
			}
		}
		if passed < 0.95*want || passed > 1.05*want {
			for i := range got {
				e := held(got[i], runs[i], true)
				if e == "" {
					t.Logf("site:   %s: stream %d: the 10-s rate is not within 5%%, its median second is (the sender stalled on the loaded machine)", what, i)
				}
				if e != "" && (passed > 1.05*want || passed < 0.5*want || !starved(t, what, waited)) {
					t.Errorf("%s: the policers passed %.2f Mbit/s, want %.2f within 5%%; stream %d: %s", what, passed/1e6, want/1e6, i, e)
				}
			}
		}
	}

	// Two workers: all of one host's packets reach one of them (the
	// trunk's host_affinity), so one meter held it.
	oneWorker := func(what, element string, f func()) {
		g0 := greenByWorker(t, tp, element)
		f()
		g1 := greenByWorker(t, tp, element)
		var total, most uint64
		for w, n := range g1 {
			d := n - g0[w]
			total += d
			most = max(most, d)
		}
		t.Logf("site: %s: %s's green packets by worker before %v, after %v", what, element, g0, g1)
		if total == 0 || most < total {
			t.Errorf("%s: %s metered the host on more than one worker (green packets before %v, after %v)", what, element, g0, g1)
		}
	}
	pace(tp.g1, "40mbit")
	oneWorker("guest upload", "up", func() {
		phase("guest upload offered 40M", 1, func() ([]float64, []iperfResult) {
			ip, r := run(tp.g1, "5201", srGuest1, "-b", "40M")
			return []float64{ip}, []iperfResult{r}
		})
	})
	unpace(tp.g1)
	pace(tp.ot, "40mbit")
	oneWorker("guest download", "down", func() {
		phase("guest download offered 40M", 1, func() ([]float64, []iperfResult) {
			ip, r := run(tp.g1, "5201", srGuest1, "-b", "40M", "-R")
			return []float64{ip}, []iperfResult{r}
		})
	})
	unpace(tp.ot)
	pace(tp.g1, "40mbit")
	pace(tp.g2, "40mbit")
	phase("two guests uploading 30M each", 2, func() ([]float64, []iperfResult) {
		var wg sync.WaitGroup
		var rates [2]float64
		var runs [2]iperfResult
		for i, h := range []struct {
			ns  *netns.NS
			src string
		}{{tp.g1, srGuest1}, {tp.g2, srGuest2}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rates[i], runs[i] = run(h.ns, []string{"5201", "5202"}[i], h.src, "-b", "30M")
			}()
		}
		wg.Wait()
		return rates[:], runs[:]
	})
	unpace(tp.g1)
	unpace(tp.g2)
}

// vlanHost puts ns's eth0 on VLAN vid and returns the interface that
// carries the host's address: eth0.VID, an ordinary Linux VLAN interface
// (ip link add link eth0 name eth0.VID type vlan id VID); or, on a kernel
// built without 802.1Q VLAN devices (CONFIG_VLAN_8021Q unset, as on some
// test machines), eth0 itself with two tc programs that do what a VLAN
// interface does: tag everything the host sends with vid, and accept
// only frames tagged with vid, untagged (the rest is dropped).
func vlanHost(t *testing.T, ns *netns.NS, vid string) string {
	t.Helper()
	vif := "eth0." + vid
	if _, err := ns.Run("ip", "link", "add", "link", "eth0", "name", vif, "type", "vlan", "id", vid); err == nil {
		ns.Up(vif)
		return vif
	}
	id, err := strconv.Atoi(vid)
	if err != nil {
		t.Fatal(err)
	}
	// TCX programs (the tc hooks, Linux 6.6): the tag is the skb's
	// metadata here (the kernel takes it out of received frames before
	// tc ingress and writes it into sent ones after tc egress).
	egress := asm.Instructions{
		asm.Mov.Imm(asm.R2, 0x0081), // htons(ETH_P_8021Q)
		asm.Mov.Imm(asm.R3, int32(id)),
		asm.FnSkbVlanPush.Call(),
		asm.Mov.Imm(asm.R0, 0), // TCX_PASS
		asm.Return(),
	}
	ingress := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R1, 20, asm.Word), // __sk_buff.vlan_present
		asm.JEq.Imm(asm.R2, 0, "drop"),
		asm.LoadMem(asm.R2, asm.R1, 24, asm.Word), // __sk_buff.vlan_tci
		asm.And.Imm(asm.R2, 0xfff),
		asm.JNE.Imm(asm.R2, int32(id), "drop"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.FnSkbVlanPop.Call(),
		asm.Mov.Imm(asm.R0, 0), // TCX_PASS
		asm.Return(),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("drop"), // TCX_DROP
		asm.Return(),
	}
	err = ns.Do(func() error {
		ifc, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		for _, x := range []struct {
			insns  asm.Instructions
			attach ebpf.AttachType
		}{{egress, ebpf.AttachTCXEgress}, {ingress, ebpf.AttachTCXIngress}} {
			prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SchedCLS, License: "GPL", Instructions: x.insns})
			if err != nil {
				return err
			}
			l, err := link.AttachTCX(link.TCXOptions{Interface: ifc.Index, Program: prog, Attach: x.attach})
			prog.Close()
			if err != nil {
				return err
			}
			t.Cleanup(func() { l.Close() })
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: no VLAN devices in this kernel, and the tc programs that stand in for eth0.%s: %v", ns.Name, vid, err)
	}
	t.Logf("%s: no VLAN devices in this kernel: eth0 tags and untags VLAN %s with tc programs", ns.Name, vid)
	return "eth0"
}

// siteBadTags sends frames onto the trunk from the switch's side, to
// lan0's MAC, that no VLAN of the router takes: VLAN id 0 (priority
// tag), 4095 (reserved), 30 (not served), untagged, and three stacked
// tags whose outer one is VLAN 10. The first four are counted at novlan,
// the last at VLAN 10's VLANDecap ("too many tags"); the router goes on
// answering.
func siteBadTags(t *testing.T, tp *siteTopo) {
	dst := tp.fwd.MAC("lan0")
	frame := func(tags ...uint16) []byte {
		f := append(append([]byte{}, dst...), 0x02, 0, 0, 0, 0, 0x99)
		for _, v := range tags {
			f = append(f, 0x81, 0x00, byte(v>>8), byte(v))
		}
		f = append(f, 0x08, 0x00, 0x45)
		return append(f, make([]byte, 60)...)
	}
	snap := func() (uint64, uint64) {
		s := (&topo{fwd: tp.fwd}).snapshot(t)
		var novlan uint64
		for _, e := range s.Elements {
			if e.Element == "novlan" {
				novlan += e.Packets
			}
		}
		return novlan, counter(s, "VLANDecap", "too many tags")
	}
	n0, m0 := snap()
	err := tp.sw.Do(func() error {
		ifc, err := net.InterfaceByName("trunk")
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		to := &unix.SockaddrLinklayer{Ifindex: ifc.Index, Halen: 6}
		copy(to.Addr[:], dst)
		for _, f := range [][]byte{frame(0), frame(4095), frame(30), frame(), frame(10, 20, 30)} {
			if err := unix.Sendto(fd, f, 0, to); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("sending onto the trunk: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n1, m1 := snap()
		if n1-n0 >= 4 && m1-m0 >= 1 {
			t.Logf("novlan +%d, VLANDecap too many tags +%d", n1-n0, m1-m0)
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("after the bad frames: novlan +%d (want 4: ids 0, 4095, 30, untagged), too many tags +%d (want 1)", n1-n0, m1-m0)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	pingOK(t, tp.lan, srLANGW)
}

// natCurl6 fetches url from ns from its address src (not the SLAAC one
// the router's advertisements gave it) and checks the body.
func natCurl6(t *testing.T, ns *netns.NS, src, url, body string) {
	t.Helper()
	out, err := ns.Run("curl", "-sf", "-6", "--interface", src, "--max-time", "5", url)
	if err != nil || out != body {
		t.Errorf("curl -6 %s from %s (%s): %v: %q", url, ns.Name, src, err, out)
	}
}

// siteRA: each inside host takes its IPv6 default route from the
// router's advertisements on its VLAN (a link-local gateway, proto ra)
// and configures a SLAAC address in its VLAN's prefix, never in the
// other VLAN's (each VLAN's RouterAdvertiser advertises its own prefix).
// The first unsolicited advertisements come within 16 s of the start.
func siteRA(t *testing.T, tp *siteTopo) {
	for _, h := range []struct {
		ns         *netns.NS
		own, other string
	}{{tp.lan, "2001:db8:10:", "2001:db8:20:"}, {tp.g1, "2001:db8:20:", "2001:db8:10:"}, {tp.g2, "2001:db8:20:", "2001:db8:10:"}} {
		deadline := time.Now().Add(40 * time.Second)
		for {
			route, _ := h.ns.Run("ip", "-6", "route", "show", "default")
			addrs, _ := h.ns.Run("ip", "-6", "addr", "show", "dynamic")
			if strings.Contains(route, "proto ra") && strings.Contains(route, "via fe80:") && strings.Contains(addrs, h.own) {
				if strings.Contains(addrs, h.other) {
					t.Errorf("%s took an address of the other VLAN's prefix:\n%s", h.ns.Name, addrs)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: no default route or SLAAC address from router advertisements within 40 s:\nroutes: %s\naddresses: %s", h.ns.Name, route, addrs)
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	if n := counter((&topo{fwd: tp.fwd}).snapshot(t), "RouterAdvertiser", "advertisements"); n == 0 {
		t.Errorf("the RouterAdvertisers counted no advertisement")
	}
}

// greenByWorker is a Policer's green packets on each worker.
func greenByWorker(t *testing.T, tp *siteTopo, element string) map[int]uint64 {
	m := map[int]uint64{}
	for _, e := range (&topo{fwd: tp.fwd}).snapshot(t).Elements {
		if e.Element != element {
			continue
		}
		for _, c := range e.Counters {
			if c.Name == "green" {
				m[e.Worker] += c.Value
			}
		}
	}
	return m
}
