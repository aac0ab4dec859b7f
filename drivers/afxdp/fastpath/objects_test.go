package fastpath

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// generateArgs returns the bpf2go command of objects.go's first
// //go:generate line, split as go generate splits it (words, and
// double-quoted Go strings).
func generateArgs(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("objects.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(src), "\n") {
		rest, ok := strings.CutPrefix(line, "//go:generate ")
		if !ok || !strings.Contains(rest, "bpf2go") {
			continue
		}
		var args []string
		for rest = strings.TrimSpace(rest); rest != ""; rest = strings.TrimSpace(rest) {
			if rest[0] == '"' {
				q, err := strconv.QuotedPrefix(rest)
				if err != nil {
					t.Fatalf("objects.go: %q: %v", line, err)
				}
				w, _ := strconv.Unquote(q)
				args = append(args, w)
				rest = rest[len(q):]
				continue
			}
			w, r, _ := strings.Cut(rest, " ")
			args = append(args, w)
			rest = r
		}
		return args
	}
	t.Fatal("objects.go has no //go:generate line running bpf2go")
	return nil
}

// TestObjectsUpToDate compiles bpf/fastpath.c again, with the generate
// command of objects.go, into a temporary directory, and requires the
// committed fastpath_bpfel.o and fastpath_bpfel.go to be byte for byte
// the same. bpf2go makes the output independent of the directory
// (-fdebug-prefix-map, -fno-ident, DWARF stripped, BTF kept), so only
// the sources and the compiler decide the bytes: the test runs only
// with the clang version that bpf/clang-version records (go generate
// writes it), and skips with another, or without clang or llvm-strip.
func TestObjectsUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compiling the C program")
	}
	for _, tool := range []string{"clang", "llvm-strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (Debian: apt-get install clang llvm): the committed objects are not checked against bpf/fastpath.c", tool)
		}
	}
	want, err := os.ReadFile("bpf/clang-version")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("clang", "--version").Output()
	if err != nil {
		t.Fatalf("clang --version: %v", err)
	}
	have, _, _ := strings.Cut(string(out), "\n")
	if have != strings.TrimSpace(string(want)) {
		t.Skipf("the objects were built with %q, the installed clang is %q: its bytes would differ; "+
			"after changing bpf/, regenerate (go generate ./drivers/afxdp/fastpath) and commit", strings.TrimSpace(string(want)), have)
	}

	args := generateArgs(t)
	if len(args) < 3 || args[0] != "go" || args[1] != "run" {
		t.Fatalf("objects.go's go:generate line is not \"go run ...bpf2go ...\": %q", args)
	}
	dir := t.TempDir()
	// bpf2go's flags precede its two positional arguments.
	cmdArgs := append(append(append([]string{}, args[1:3]...), "-output-dir", dir), args[3:]...)
	cmd := exec.Command("go", cmdArgs...)
	cmd.Env = append(os.Environ(), "GOFILE=objects.go", "GOPACKAGE=fastpath")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(cmdArgs, " "), err, out)
	}
	for _, name := range []string{"fastpath_bpfel.o", "fastpath_bpfel.go"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, committed) {
			t.Errorf("%s does not match bpf/: run go generate ./drivers/afxdp/fastpath and commit the result", name)
		}
	}
}

// TestLayouts checks the map layouts the C program declares (BTF of the
// committed object) against the constants the Go side encodes with:
// sizes, and the offset of every field either side reads or writes.
func TestLayouts(t *testing.T) {
	spec, err := loadFastpath()
	if err != nil {
		t.Fatal(err)
	}
	type field struct {
		name string
		off  int
	}
	for _, c := range []struct {
		m      string
		value  bool // the value's type, else the key's
		size   int
		fields []field
	}{
		{"fp_routes", false, routeKeySize, []field{{"prefixlen", 0}, {"addr", 4}}},
		{"fp_routes", true, routeValueSize, []field{{"ifindex", routeOffIfindex}, {"gateway", routeOffGateway}, {"flags", routeOffFlags}}},
		{"fp_neighbors", false, neighKeySize, []field{{"ifindex", 0}, {"ip", 4}}},
		{"fp_neighbors", true, neighValueSize, []field{{"eth", neighOffDst}, {"mtu", neighOffMTU}, {"expires", neighOffExpires}}},
		{"fp_counters", true, counterValueSize, []field{{"forwarded", counterOffForwarded}, {"forwarded_bytes", counterOffBytes}, {"slow", counterOffSlow}}},
		{"fp_flows", false, flowKeySize, []field{{"ifindex", flowKeyOffIfindex}, {"src", flowKeyOffSrc}, {"dst", flowKeyOffDst},
			{"sport", flowKeyOffSport}, {"dport", flowKeyOffDport}, {"proto", flowKeyOffProto}}},
		{"fp_flows", true, flowValueSize, []field{{"ifindex", flowOffIfindex}, {"slot", flowOffSlot}, {"eth", flowOffEth},
			{"src", flowOffSrc}, {"dst", flowOffDst}, {"sport", flowOffSport}, {"dport", flowOffDport},
			{"ip_delta", flowOffIPDelta}, {"l4_delta", flowOffL4Delta}, {"ttl_dec", flowOffTTLDec},
			{"icmp_type", flowOffICMPType}, {"mtu", flowOffMTU}, {"gen", flowOffGen}}},
		{"fp_flow_gen", true, flowGenSize, []field{{"gen", flowGenOffGen}, {"count", flowGenOffCount}}},
		{"fp_flow_stats", true, flowStatSize, []field{{"packets", flowStatOffPkts}, {"bytes", flowStatOffBytes}}},
		{"fp_egress", true, egressValueSize, []field{{"disabled", egressOffOff}, {"err", egressOffErr}, {"via", egressOffVia}}},
		{"fp_routes6", false, route6KeySize, []field{{"prefixlen", 0}, {"addr", 4}}},
		{"fp_routes6", true, route6ValueSize, []field{{"ifindex", route6OffIfindex}, {"flags", route6OffFlags}, {"gateway", route6OffGateway}}},
		{"fp_neighbors6", false, neigh6KeySize, []field{{"ifindex", 0}, {"ip", 4}}},
		{"fp_neighbors6", true, neigh6ValueSize, []field{{"eth", neigh6OffDst}, {"mtu", neigh6OffMTU}, {"expires", neigh6OffExpires}}},
		// ports: sport then dport, one word.
		{"fp_flows6", false, flow6KeySize, []field{{"ifindex", flow6KeyOffIfindex}, {"src", flow6KeyOffSrc}, {"dst", flow6KeyOffDst},
			{"ports", flow6KeyOffSport}, {"proto", flow6KeyOffProto}}},
		{"fp_flows6", true, flow6ValueSize, []field{{"ifindex", flow6OffIfindex}, {"slot", flow6OffSlot}, {"eth", flow6OffEth},
			{"mtu", flow6OffMTU}, {"hop_dec", flow6OffHopDec}, {"gen", flow6OffGen}}},
		{"fp_local", false, localKeySize, []field{{"addr", 0}}},
		{"fp_police", true, policeValueSize, []field{{"tat", policeOffTat}, {"passed", policeOffPassed}, {"dropped", policeOffDropped}}},
	} {
		ms, ok := spec.Maps[c.m]
		if !ok {
			t.Errorf("no map %s in the object", c.m)
			continue
		}
		typ, what := ms.Key, "key"
		if c.value {
			typ, what = ms.Value, "value"
		}
		s, ok := btf.UnderlyingType(typ).(*btf.Struct)
		if !ok {
			t.Errorf("%s %s: %v is not a struct", c.m, what, typ)
			continue
		}
		if int(s.Size) != c.size {
			t.Errorf("%s %s (struct %s): %d bytes in C, %d in Go", c.m, what, s.Name, s.Size, c.size)
		}
		offs := map[string]int{}
		memberOffsets(s.Members, 0, offs)
		for _, f := range c.fields {
			if off, ok := offs[f.name]; !ok {
				t.Errorf("%s %s (struct %s): no field %s", c.m, what, s.Name, f.name)
			} else if off != f.off {
				t.Errorf("%s %s (struct %s): %s at %d in C, %d in Go", c.m, what, s.Name, f.name, off, f.off)
			}
		}
	}
	// The neighbour's MACs: destination then source, 12 bytes.
	if neighOffSrc != neighOffDst+6 || flowOffEth+12 != flowOffSrc || neigh6OffSrc != neigh6OffDst+6 ||
		flow6OffEth+12 != flow6OffMTU || flow6KeyOffDport != flow6KeyOffSport+2 {
		t.Errorf("Go MAC offsets: neighbour dst %d src %d, flow eth %d src %d", neighOffDst, neighOffSrc, flowOffEth, flowOffSrc)
	}
}

// memberOffsets records the byte offset of every named member, those of
// anonymous struct and union members included, as C sees them.
func memberOffsets(members []btf.Member, base int, offs map[string]int) {
	for _, mb := range members {
		off := base + int(mb.Offset.Bytes())
		switch t := btf.UnderlyingType(mb.Type).(type) {
		case *btf.Struct:
			if mb.Name == "" {
				memberOffsets(t.Members, off, offs)
				continue
			}
		case *btf.Union:
			if mb.Name == "" {
				memberOffsets(t.Members, off, offs)
				continue
			}
		}
		offs[mb.Name] = off
	}
}

// TestOneMapPerCallSite: every helper call that takes a map (lookup,
// update, redirect) must see one map only, loaded into R1 in the same
// straight line of code. The verifier then specialises the call
// (inlines array and hash lookups, calls the map type's redirect
// directly); a call site that two maps reach, which clang's tail merging
// makes of two "return bpf_redirect_map(...)", falls back to the generic
// helper and its indirect call: 20 ns more per frame. The generate line
// of objects.go therefore passes -mllvm -enable-tail-merge=false;
// this test catches a build without it (checked: it fails then).
func TestOneMapPerCallSite(t *testing.T) {
	spec, err := loadFastpath()
	if err != nil {
		t.Fatal(err)
	}
	for name, ps := range spec.Programs {
		type at struct {
			off asm.RawInstructionOffset
			ins *asm.Instruction
		}
		var insns []at
		targets := map[asm.RawInstructionOffset]bool{}
		for iter := ps.Instructions.Iterate(); iter.Next(); {
			insns = append(insns, at{iter.Offset, iter.Ins})
			op := iter.Ins.OpCode
			if op.Class().IsJump() && op.JumpOp() != asm.Call && op.JumpOp() != asm.Exit {
				targets[iter.Offset+1+asm.RawInstructionOffset(iter.Ins.Offset)] = true
			}
		}
		calls := map[asm.BuiltinFunc]int{}
		for i, c := range insns {
			if !c.ins.IsBuiltinCall() {
				continue
			}
			fn := asm.BuiltinFunc(c.ins.Constant)
			if fn != asm.FnMapLookupElem && fn != asm.FnMapUpdateElem && fn != asm.FnRedirectMap {
				continue
			}
			calls[fn]++
			ok := false
			for j := i - 1; j >= 0; j-- {
				if targets[insns[j+1].off] {
					break // reachable from elsewhere: R1 may hold another map
				}
				ins := insns[j].ins
				if ins.IsLoadFromMap() && ins.Dst == asm.R1 {
					ok = true
					break
				}
				if cls := ins.OpCode.Class(); ins.Dst == asm.R1 && (cls.IsALU() || cls.IsLoad()) || ins.IsFunctionCall() || ins.IsBuiltinCall() {
					break
				}
			}
			if !ok {
				t.Errorf("%s: the %v at instruction %d is reached with more than one map, or none, in R1", name, fn, c.off)
			}
		}
		if ps.Type == ebpf.XDP && calls[asm.FnRedirectMap] != 2 {
			t.Errorf("%s: %d bpf_redirect_map call sites, want 2 (fp_devmap, xsks_map)", name, calls[asm.FnRedirectMap])
		}
	}
}

// TestProgramsKeepTheirMACs: each Program's constants are its own (every
// load sets them on a copy of the parsed object), so two devices'
// programs in one process each forward only frames to their own MAC.
func TestProgramsKeepTheirMACs(t *testing.T) {
	f := newFixture(t)
	otherMAC := [6]byte{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}
	p2, err := NewProgram(f.t, 4, otherMAC)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	f2 := &fixture{tb: t, t: f.t, p: p2}
	in := frame("10.1.0.2", "10.2.4.4", 64, 26) // to ourMAC
	f2.wantSlow("ourMAC on the second program", in)
	f.wantForwarded("ourMAC on the first program", in, gwMAC, outMAC7)
	copy(in, otherMAC[:])
	f.wantSlow("otherMAC on the first program", in)
	f2.wantForwarded("otherMAC on the second program", in, gwMAC, outMAC7)
}
