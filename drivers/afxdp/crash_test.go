package afxdp

import (
	"fmt"
	"github.com/junction-dataplane/junction/drivers/kfeature"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/asavie/xdp"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/drivers/internal/drvtest"
	"github.com/junction-dataplane/junction/drivers/internal/nlink"
)

const helperEnv = "JUNCTION_AFXDP_HELPER"

// TestHelperProcess is not a test: the crash tests run the test binary as
// a child in a namespace with helperEnv set, and SIGKILL it once it has
// attached a program.
func TestHelperProcess(t *testing.T) {
	how := os.Getenv(helperEnv)
	if how == "" {
		t.Skip("helper process only")
	}
	ifname := os.Getenv(helperEnv + "_IF")
	switch how {
	case "netlink":
		// What a run on a kernel without XDP BPF links leaves behind.
		nl, err := nlink.Open()
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		l, err := nl.LinkByName(ifname)
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		p, err := xdp.NewProgram(l.RxQueues)
		if err == nil {
			err = nl.SetXDP(l.Index, p.Program.FD(), unix.XDP_FLAGS_SKB_MODE)
		}
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
	case "open":
		if _, err := Open(cfg(ifname, "auto"), drvOpenCtx()); err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
	os.Exit(0)
}

// TestCrash kills a process that holds the interface and opens the
// interface again.
func TestCrash(t *testing.T) {
	for _, how := range []string{"netlink", "open"} {
		t.Run(how, func(t *testing.T) {
			if how == "open" {
				// Open attaches with a BPF link where the kernel
				// has them: only those die with their process.
				kfeature.Require(t, kfeature.XDPLink)
			}
			pr := drvtest.NewPair(t, 1)
			cmd := pr.DevNS.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), helperEnv+"="+how, helperEnv+"_IF="+pr.DevIf)
			p := pr.DevNS.StartCmd(cmd)
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(p.Output(), "ready") {
				select {
				case <-p.Done():
					t.Fatalf("helper exited: %s", p.Output())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("helper not ready: %s", p.Output())
				}
				time.Sleep(10 * time.Millisecond)
			}
			if !xdpAttached(t, pr.DevNS, pr.DevIf) {
				t.Fatal("helper attached nothing")
			}
			p.Kill()
			stale := xdpAttached(t, pr.DevNS, pr.DevIf)
			if want := how == "netlink"; stale != want {
				t.Fatalf("after SIGKILL program attached = %v, want %v (BPF links die with their process)", stale, want)
			}
			d, err := openIn(t, pr.DevNS, cfg(pr.DevIf, "auto"), 1)
			if err != nil {
				t.Fatal(err)
			}
			raw := pr.PeerNS.MustRaw(pr.PeerIf)
			for i := 0; i < 20; i++ {
				raw.Send(drvtest.Frame(pr.DevMAC, pr.PeerMAC, i, uint32(i), 64))
			}
			if got, _ := drvtest.Collect(d, []int{0}, 20, 3*time.Second); len(got) != 20 {
				t.Fatalf("after restart received %d of 20", len(got))
			}
			d.Close()
			if xdpAttached(t, pr.DevNS, pr.DevIf) {
				t.Fatal("program left after Close")
			}
		})
	}
}

// TestForeignProgram: a program Junction did not load is left alone.
func TestForeignProgram(t *testing.T) {
	pr := drvtest.NewPair(t, 1)
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "not_ours", Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}, // XDP_PASS
	})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	err = pr.DevNS.Do(func() error {
		nl, err := nlink.Open()
		if err != nil {
			return err
		}
		defer nl.Close()
		l, err := nl.LinkByName(pr.DevIf)
		if err != nil {
			return err
		}
		return nl.SetXDP(l.Index, prog.FD(), unix.XDP_FLAGS_SKB_MODE)
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = openIn(t, pr.DevNS, cfg(pr.DevIf, "auto"), 1)
	if err == nil || !strings.Contains(err.Error(), "not_ours") {
		t.Fatalf("Open over a foreign program: %v", err)
	}
	if !xdpAttached(t, pr.DevNS, pr.DevIf) {
		t.Fatal("the foreign program was removed")
	}
}
