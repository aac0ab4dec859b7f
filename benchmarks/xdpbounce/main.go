package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
)

func main() {
	from := flag.String("from", "", "interface the program is attached to")
	to := flag.String("to", "", "interface every frame is redirected to")
	generic := flag.Bool("generic", false, "attach in generic (skb) mode instead of native")
	drop := flag.Bool("drop", false, "drop IPv4 frames and pass the others, instead of redirecting")
	flag.Parse()
	if err := run(*from, *to, *generic, *drop); err != nil {
		fmt.Fprintln(os.Stderr, "xdpbounce:", err)
		os.Exit(1)
	}
}

func run(from, to string, generic, drop bool) error {
	src, err := netlink.LinkByName(from)
	if err != nil {
		return fmt.Errorf("-from %q: %w", from, err)
	}
	var insns asm.Instructions
	target := "drop IPv4"
	if drop {
		// if data+14 > data_end or ethertype != 0x0800: XDP_PASS;
		// else XDP_DROP. (The ethertype is loaded little-endian:
		// 0x0800 on the wire reads as 0x0008.)
		insns = asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // data
			asm.LoadMem(asm.R3, asm.R1, 4, asm.Word), // data_end
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, 14),
			asm.JGT.Reg(asm.R4, asm.R3, "pass"),
			asm.LoadMem(asm.R5, asm.R2, 12, asm.Half),
			asm.JNE.Imm(asm.R5, 0x0008, "pass"),
			asm.Mov.Imm(asm.R0, 1), // XDP_DROP
			asm.Return(),
			asm.Mov.Imm(asm.R0, 2).WithSymbol("pass"), // XDP_PASS
			asm.Return(),
		}
	} else {
		dst, err := netlink.LinkByName(to)
		if err != nil {
			return fmt.Errorf("-to %q: %w", to, err)
		}
		target = fmt.Sprintf("redirect to %s (ifindex %d)", to, dst.Attrs().Index)
		// r0 = bpf_redirect(ifindex, 0); return r0 (XDP_REDIRECT, or
		// XDP_ABORTED if the target refuses).
		insns = asm.Instructions{
			asm.Mov.Imm(asm.R1, int32(dst.Attrs().Index)),
			asm.Mov.Imm(asm.R2, 0),
			asm.FnRedirect.Call(),
			asm.Return(),
		}
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, Instructions: insns, License: "GPL"})
	if err != nil {
		return fmt.Errorf("loading the program: %w", err)
	}
	defer prog.Close()
	flags := 1 << 2 // XDP_FLAGS_DRV_MODE
	if generic {
		flags = 1 << 1 // XDP_FLAGS_SKB_MODE
	}
	if err := netlink.LinkSetXdpFdWithFlags(src, prog.FD(), flags); err != nil {
		return fmt.Errorf("attaching to %s: %w", from, err)
	}
	defer netlink.LinkSetXdpFdWithFlags(src, -1, flags)
	fmt.Printf("xdpbounce: %s: %s\n", from, target)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	return nil
}
