package afxdp

import (
	"fmt"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/drivers/afxdp/fastpath"
	"github.com/junction-dataplane/junction/drivers/internal/nlink"
	"github.com/junction-dataplane/junction/drivers/kfeature"
)

func init() { drivers.RegisterCheck("afxdp", check) }

// check is the part of open that reads the system without changing it:
// the interface exists in this network namespace, and the device's MAC
// (the mac key's, else the interface's); AF_XDP, native XDP where mode
// asks for it, and what the fast path will make of this kernel
// (planFastPath): a warning where run will step down, an error where run
// would fail.
func check(cfg any, ctx drivers.OpenContext) (drivers.Info, error) {
	info := drivers.Info{Name: ctx.Name, Driver: "afxdp", MAC: ctx.MAC, Addresses: ctx.Addresses}
	c, ok := cfg.(*Config)
	if !ok {
		return info, fmt.Errorf("afxdp: config is %T, want *afxdp.Config", cfg)
	}
	info.FastPath = c.FastPath
	if err := drivers.CheckInterface(&info, c.Interface); err != nil {
		return info, err
	}
	if m, ok := kfeature.IsMissing(kfeature.Have(kfeature.AFXDP)); ok {
		return info, conf.Errorf("interface", "%s: %v (use driver = \"afpacket\")", c.Interface, m)
	}
	var kind string
	ifindex := 0
	if nl, err := nlink.Open(); err == nil {
		if l, err := nl.LinkByName(c.Interface); err == nil {
			kind, ifindex = l.Kind, l.Index
		}
		nl.Close()
	}
	if c.Mode == "native" && ifindex > 0 {
		if p, err := fastpath.NewXmitProbe(); err == nil {
			native, err := p.NativeXDP(ifindex)
			p.Close()
			if err == nil && !native {
				return info, noNativeXDP(c.Interface)
			}
		}
	}
	if c.FastPath {
		ws, err := planFastPath(c, kind)
		info.Warnings = append(info.Warnings, ws...)
		if err != nil {
			return info, err
		}
	}
	return info, nil
}

// noNativeXDP is the error for mode = "native" on a device without it.
func noNativeXDP(ifname string) error {
	return conf.Errorf("mode", "%s: native XDP not available: its driver runs no XDP programs (NETDEV_XDP_ACT_BASIC is not among its XDP features); use mode = \"generic\" or \"auto\"", ifname)
}

// planFastPath says, before anything is loaded, what openFastPath will
// make of fastpath on this kernel for a device of link kind kind: the
// steps down it will take, or the error an explicit fastpath_redirect
// gets. The words are openFastPath's.
func planFastPath(c *Config, kind string) ([]string, error) {
	key := c.FastPathRedirect
	if key == "" {
		key = "auto"
	}
	if err := fastpath.Supported(); err != nil {
		if key != "auto" {
			return nil, explicitRedirectErr(c.Interface, key, err)
		}
		return []string{noFastPathWhy(err)}, nil
	}
	if redirectVia(key, kind) != fastpath.ViaXDP {
		if err := fastpath.HandOffSupported(); err != nil {
			if key == "tc" {
				return nil, tcRedirectErr(c.Interface, err)
			}
			return []string{viaXDPInstead(key, err)}, nil
		}
	}
	return nil, nil
}

// The words of the fast path's steps down and errors, for check and run.

func noFastPathWhy(why error) string {
	return fmt.Sprintf("no in-kernel fast path: %v; the graph forwards all of this device's traffic (every packet costs the graph's time, as without fastpath)", why)
}

func viaXDPInstead(key string, why error) string {
	return fmt.Sprintf("fastpath_redirect %q would reach this device through TC, but %v: reached by XDP redirects instead (a veth takes those only while its peer runs XDP or has GRO on; otherwise its traffic takes the graph)", key, why)
}

func explicitRedirectErr(ifname, key string, why error) error {
	return conf.Errorf("fastpath_redirect", "%s: %q cannot be honoured: the in-kernel fast path cannot run: %v (with \"auto\" the graph forwards this device's traffic instead)", ifname, key, why)
}

func tcRedirectErr(ifname string, why error) error {
	return conf.Errorf("fastpath_redirect", "%s: \"tc\" cannot be honoured: %v (\"auto\" falls back to XDP redirects, and to the graph where those cannot reach the device)", ifname, why)
}
