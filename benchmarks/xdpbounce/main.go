package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
)

func main() {
	from := flag.String("from", "", "interface the program is attached to")
	to := flag.String("to", "", "interface every frame is redirected to")
	generic := flag.Bool("generic", false, "attach in generic (skb) mode instead of native")
	drop := flag.Bool("drop", false, "drop IPv4 frames and pass the others, instead of redirecting")
	tc := flag.String("tc", "", `redirect at TC ingress (tcx) instead of XDP: "peer" (bpf_redirect_peer: into -to's veth peer's ingress) or "egress" (bpf_redirect: out of -to)`)
	pass := flag.Bool("pass", false, "with -tc: also attach an XDP program that passes every frame (as an AF_XDP driver's program does for the frames it leaves to the kernel)")
	flag.Parse()
	if *tc != "" {
		if err := runTC(*from, *to, *tc, *pass); err != nil {
			fmt.Fprintln(os.Stderr, "xdpbounce:", err)
			os.Exit(1)
		}
		return
	}
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

// runTC attaches, at from's TC ingress, a program that redirects every
// frame unchanged to to: into to's peer's ingress (bpf_redirect_peer, a
// veth's other end, no backlog queue) or out of to (bpf_redirect). With
// pass, an XDP program returning XDP_PASS is attached to from as well.
func runTC(from, to, how string, pass bool) error {
	src, err := netlink.LinkByName(from)
	if err != nil {
		return fmt.Errorf("-from %q: %w", from, err)
	}
	dst, err := netlink.LinkByName(to)
	if err != nil {
		return fmt.Errorf("-to %q: %w", to, err)
	}
	fn := asm.FnRedirectPeer
	switch how {
	case "peer":
	case "egress":
		fn = asm.FnRedirect
	default:
		return fmt.Errorf("-tc %q: want peer or egress", how)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SchedCLS, License: "GPL", Instructions: asm.Instructions{
		asm.Mov.Imm(asm.R1, int32(dst.Attrs().Index)),
		asm.Mov.Imm(asm.R2, 0),
		fn.Call(),
		asm.Return(),
	}})
	if err != nil {
		return fmt.Errorf("loading the TC program: %w", err)
	}
	defer prog.Close()
	l, err := link.AttachTCX(link.TCXOptions{Interface: src.Attrs().Index, Program: prog, Attach: ebpf.AttachTCXIngress})
	if err != nil {
		return fmt.Errorf("attaching to %s's TC ingress: %w", from, err)
	}
	defer l.Close()
	target := fmt.Sprintf("TC ingress: redirect (%s) to %s", how, to)
	if pass {
		xp, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL", Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, 2), // XDP_PASS
			asm.Return(),
		}})
		if err != nil {
			return fmt.Errorf("loading the XDP program: %w", err)
		}
		defer xp.Close()
		if err := netlink.LinkSetXdpFdWithFlags(src, xp.FD(), 1<<2); err != nil {
			return fmt.Errorf("attaching XDP to %s: %w", from, err)
		}
		defer netlink.LinkSetXdpFdWithFlags(src, -1, 1<<2)
		target += ", XDP passing every frame"
	}
	fmt.Printf("xdpbounce: %s: %s\n", from, target)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	return nil
}
