package kfeature

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

func TestMain(m *testing.M) {
	// Shown with go test -v: which features this run had.
	fmt.Fprintln(os.Stderr, Summary())
	os.Exit(m.Run())
}

func TestEmulatedMissing(t *testing.T) {
	t.Setenv(EnvMissing, "xdp_adjust_meta, tcx")
	for _, f := range []Feature{XDPAdjustMeta, TCX} {
		err := Have(f)
		m, ok := IsMissing(err)
		if !ok || m.Feature != f || !m.Emulated {
			t.Errorf("Have(%s) = %v, want an emulated Missing", f, err)
		}
		if !errors.Is(err, ebpf.ErrNotSupported) {
			t.Errorf("Have(%s): not ErrNotSupported", f)
		}
		if !strings.Contains(err.Error(), string(f)) || !strings.Contains(err.Error(), EnvMissing) {
			t.Errorf("Have(%s) = %q: should name the feature and the variable", f, err)
		}
	}
	if s, _ := StatusOf(XDPAdjustMeta); s != Emulated {
		t.Errorf("StatusOf = %s, want emulated", s)
	}
	if err := HaveAll(LPMTrie, TCX); err == nil {
		t.Error("HaveAll with tcx emulated missing: nil")
	}
}

func TestEmulatedOptional(t *testing.T) {
	t.Setenv(EnvMissing, "optional")
	for _, i := range Catalog {
		s, _ := StatusOf(i.Name)
		if i.Optional && s != Emulated {
			t.Errorf("%s: optional, but %s under %s=optional", i.Name, s, EnvMissing)
		}
		if !i.Optional && s == Emulated {
			t.Errorf("%s: required, but emulated missing", i.Name)
		}
	}
}

func TestCheckEmulation(t *testing.T) {
	t.Setenv(EnvMissing, "xdp_adjust_meta,xdp_ajust_meta")
	err := CheckEmulation()
	if err == nil || !strings.Contains(err.Error(), `"xdp_ajust_meta"`) {
		t.Errorf("CheckEmulation = %v, want the misspelt name", err)
	}
	t.Setenv(EnvMissing, "optional,tcx")
	if err := CheckEmulation(); err != nil {
		t.Errorf("CheckEmulation = %v", err)
	}
}

// fakeTB records what Require did.
type fakeTB struct{ skipped, failed string }

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Skipf(s string, a ...any)       { f.skipped = fmt.Sprintf(s, a...) }
func (f *fakeTB) Fatalf(s string, a ...any)      { f.failed = fmt.Sprintf(s, a...) }
func (f *fakeTB) String() string                 { return f.skipped + f.failed }
func (f *fakeTB) Logf(string, ...any)            {}
func (f *fakeTB) Errorf(s string, a ...any)      { f.failed = fmt.Sprintf(s, a...) }
func (f *fakeTB) Cleanup(func())                 {}
func (f *fakeTB) Setenv(k, v string)             {}
func (f *fakeTB) Name() string                   { return "fake" }
func (f *fakeTB) Run(string, func(*fakeTB)) bool { return true }

func TestRequire(t *testing.T) {
	t.Setenv(EnvMissing, "tcx")
	t.Setenv(EnvRequire, "")
	var f fakeTB
	Require(&f, LPMTrie, TCX)
	if !strings.Contains(f.skipped, "tcx") || f.failed != "" {
		t.Errorf("Require without %s: skipped %q failed %q, want a skip naming tcx", EnvRequire, f.skipped, f.failed)
	}
	t.Setenv(EnvRequire, "1")
	f = fakeTB{}
	Require(&f, TCX)
	if !strings.Contains(f.failed, "tcx") || f.skipped != "" {
		t.Errorf("Require with %s=1: skipped %q failed %q, want a failure naming tcx", EnvRequire, f.skipped, f.failed)
	}
	t.Setenv(EnvMissing, "")
	f = fakeTB{}
	Require(&f, AFXDP)
	if os.Geteuid() == 0 && (f.failed != "" || f.skipped != "") {
		// As root the probe decides; a kernel without AF_XDP would
		// skip, which is right too, but then say so.
		if s, _ := StatusOf(AFXDP); s == Yes {
			t.Errorf("Require(af_xdp) with af_xdp present: %q", f.String())
		}
	}
}

func TestCatalog(t *testing.T) {
	seen := map[Feature]bool{}
	for _, i := range Catalog {
		if seen[i.Name] {
			t.Errorf("%s listed twice", i.Name)
		}
		seen[i.Name] = true
		if i.Since == "" || i.Uses == "" || i.Without == "" {
			t.Errorf("%s: incomplete entry %+v", i.Name, i)
		}
		if probes[i.Name] == nil && i.Name != XDPFeatures {
			t.Errorf("%s: no probe", i.Name)
		}
	}
}

// TestProbes runs every probe: as root each gives a definite answer on
// any kernel this runs on (no "unknown"), and the features every kernel
// since 5.4 has are there.
func TestProbes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("probes need root (CAP_BPF)")
	}
	t.Setenv(EnvMissing, "")
	t.Log(Summary())
	for _, r := range Report() {
		if r.Name == XDPFeatures {
			continue // registered by the fast path, not here
		}
		if r.Status == Unknown {
			t.Errorf("%s: the probe could not tell: %s", r.Name, r.Detail)
		}
	}
	for _, f := range []Feature{XDPProgram, XSKMap, LPMTrie, DevmapHash, PerCPUArray, XDPRedirectMap} {
		if s, err := StatusOf(f); s != Yes {
			t.Errorf("%s: %s (%v): every kernel since 5.4 has it", f, s, err)
		}
	}
}
