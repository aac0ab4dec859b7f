package netns

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestEnv(t *testing.T) {
	RequireRoot(t)
	var names []string
	var rootLink string
	t.Run("build", func(t *testing.T) {
		env := New(t)
		a, b := env.NS("a"), env.NS("b")
		names = []string{a.Name, b.Name}
		env.Veth(a, "x0", b, "y0", 2)
		a.Addr("x0", "10.99.0.1/24")
		b.Addr("y0", "10.99.0.2/24")
		b.SetMAC("y0", "02:00:00:00:99:02")
		if got := b.MAC("y0").String(); got != "02:00:00:00:99:02" {
			t.Fatalf("MAC = %s", got)
		}
		if n := len(strings.Fields(a.MustRun("ls", "/sys/class/net/x0/queues"))); n != 4 {
			t.Fatalf("x0 has %d queue dirs, want 4 (2 rx + 2 tx)", n)
		}
		a.MustRun("ping", "-c1", "-W2", "10.99.0.2")

		// A root-namespace end, removed by the cleanup.
		rootLink = env.Unique("jt")
		env.Veth(nil, rootLink, a, "z0", 1)

		// Do: the function sees the namespace's interfaces.
		err := a.Do(func() error {
			if _, err := net.InterfaceByName("x0"); err != nil {
				return err
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := net.InterfaceByName("x0"); err == nil {
			t.Fatal("x0 visible in the root namespace after Do")
		}

		p := b.Start("sleep", "60")
		if err := p.Wait(50 * time.Millisecond); err == nil {
			t.Fatal("sleep exited early")
		}
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(5 * time.Second); err == nil {
			t.Fatal("want an exit error after SIGTERM")
		}
		b.Start("sleep", "60") // left running: the cleanup kills it
	})
	for _, n := range names {
		if _, err := os.Stat("/run/netns/" + n); err == nil {
			t.Errorf("namespace %s left behind", n)
		}
	}
	if err := exec.Command("ip", "link", "show", "dev", rootLink).Run(); err == nil {
		t.Errorf("link %s left behind", rootLink)
	}
}

func TestRunError(t *testing.T) {
	RequireRoot(t)
	env := New(t)
	a := env.NS("e")
	if _, err := a.Run("false"); err == nil || !strings.Contains(err.Error(), a.Name) {
		t.Fatalf("err = %v, want one naming the namespace", err)
	}
}
