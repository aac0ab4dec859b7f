package tables

import (
	"net/netip"
	"strconv"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/ip/route"
	"github.com/junction-dataplane/junction/elements/ip/route/kernelmirror"
)

// Main is the table an IPLookup reads when it names none.
const Main = "main"

// Config is one route table's configuration.
type Config struct {
	Routes      []string `toml:"routes"`
	RoutesFile  string   `toml:"routes_file"`
	Source      string   `toml:"source"`
	KernelTable string   `toml:"kernel_table"`
	Interfaces  []string `toml:"interfaces"`
	// Interfaces6, with source = "kernel", gives IPv6 routes ports of
	// their own (after interfaces' ports), for dual-stack graphs whose
	// IPv4 and IPv6 packets leave through different elements.
	Interfaces6 []string `toml:"interfaces6"`
	NetNS       string   `toml:"netns"`
	MaxRoutes   int      `toml:"max_routes"`
	Offload     []string `toml:"offload"`
	Family      string   `toml:"family"`

	// Name is the [tables.NAME] section's name; "" for an IPLookup's own
	// table. Set by whoever makes the Config, before Validate.
	Name string `toml:"-"`
	// KernelTableKey is the key that names the kernel table in errors:
	// "kernel_table" in a section, "table" on IPLookup.
	KernelTableKey string `toml:"-"`

	routes  []route.Route   // parsed by Validate
	set     route.Set       // what routes came from: remembered in the router's SetCache when built
	checked bool            // routes passed precheck
	ports   int             // output ports the routes (or interfaces) name
	ktable  int             // the kernel table's number
	limits  route.Limits    //
	kernel  bool            // source = "kernel"
	fam     int             // 4, 6 or 0 (both)
	cache   *route.SetCache // during ValidateState only
}

// ValidateState is Validate for a graph loaded for the router whose state
// s is (a reload): an unchanged routes_file that router's tables were
// built with is not parsed and checked again (route.SetCache).
func (c *Config) ValidateState(s *elements.GraphState) error {
	c.cache = route.CacheOf(s)
	defer func() { c.cache = nil }()
	return c.Validate()
}

func (c *Config) ktableKey() string {
	if c.KernelTableKey == "" {
		return "kernel_table"
	}
	return c.KernelTableKey
}

// Validate parses the routes and the routes file (at load time, so that a
// bad line stops the graph before it starts) and checks the table fits the
// limits before anything is built.
func (c *Config) Validate() error {
	if c.MaxRoutes < 0 {
		return elements.Errorf("max_routes", "%d: want a positive number (0 = %d)", c.MaxRoutes, route.DefaultMaxRoutes)
	}
	c.limits = route.Limits{MaxRoutes: c.MaxRoutes}
	switch c.Family {
	case "":
		c.fam = 0
	case "ip4", "ipv4":
		c.fam = 4
	case "ip6", "ipv6":
		c.fam = 6
	default:
		return elements.Errorf("family", "%q: want \"ip4\" or \"ip6\" (unset: both)", c.Family)
	}
	switch c.Source {
	case "", "config":
		c.kernel = false
		for _, k := range []struct{ key, val string }{{c.ktableKey(), c.KernelTable}, {"netns", c.NetNS}} {
			if k.val != "" {
				return elements.Errorf(k.key, "only with source = \"kernel\"")
			}
		}
		if len(c.Interfaces) > 0 {
			return elements.Errorf("interfaces", "only with source = \"kernel\"")
		}
		if len(c.Interfaces6) > 0 {
			return elements.Errorf("interfaces6", "only with source = \"kernel\"")
		}
	case "kernel":
		c.kernel = true
		if err := c.validateKernel(); err != nil {
			return err
		}
		c.routes = nil
		c.ports = len(c.Interfaces) + len(c.Interfaces6)
		return c.checkOffload()
	default:
		return elements.Errorf("source", "%q: want \"config\" (routes, routes_file) or \"kernel\"", c.Source)
	}
	set, hit, err := route.LoadSet(c.cache, c.Routes, c.RoutesFile, c.limits.MaxRoutes)
	if err != nil {
		return err
	}
	routes := set.Routes()
	if len(routes) == 0 {
		if c.RoutesFile != "" {
			return elements.Errorf("routes_file", "%s holds no routes", c.RoutesFile)
		}
		return elements.Errorf("routes", "no routes: give routes or routes_file")
	}
	key := "routes"
	if c.RoutesFile != "" {
		key = "routes_file"
	}
	if c.fam != 0 {
		for i, r := range routes {
			if !c.HasFamily(r.Prefix.Addr()) {
				if i < len(c.Routes) {
					return elements.Errorf("routes", "entry %d: %v is not an IPv%d prefix (family = %q)", i+1, r.Prefix, c.fam, c.Family)
				}
				return elements.Errorf(key, "%v is not an IPv%d prefix (family = %q)", r.Prefix, c.fam, c.Family)
			}
		}
	}
	if len(routes) > c.limits.MaxRoutesOrDefault() {
		return elements.Errorf(key, "%d routes exceed max_routes %d", len(routes), c.limits.MaxRoutesOrDefault())
	}
	if !hit {
		if err := route.Precheck(routes); err != nil {
			return elements.Errorf(key, "%v", err)
		}
	}
	c.routes, c.set = routes, set
	c.checked = true
	c.ports = set.Ports()
	c.cache.Remember(set)
	return c.checkOffload()
}

func (c *Config) validateKernel() error {
	if len(c.Routes) > 0 || c.RoutesFile != "" {
		return elements.Errorf("source", "source = \"kernel\" mirrors the kernel's routes: remove routes and routes_file")
	}
	if len(c.Interfaces) == 0 {
		return elements.Errorf("interfaces", "source = \"kernel\" needs interfaces: the kernel interface of each output port, in port order")
	}
	if len(c.Interfaces) > route.MaxPort+1 {
		return elements.Errorf("interfaces", "%d interfaces: at most %d", len(c.Interfaces), route.MaxPort+1)
	}
	if len(c.Interfaces)+len(c.Interfaces6) > route.MaxPort+1 {
		return elements.Errorf("interfaces6", "%d interfaces and %d interfaces6: at most %d ports", len(c.Interfaces), len(c.Interfaces6), route.MaxPort+1)
	}
	for _, key := range []string{"interfaces", "interfaces6"} {
		list, base := c.Interfaces, 0
		if key == "interfaces6" {
			list, base = c.Interfaces6, len(c.Interfaces)
		}
		seen := map[string]int{}
		for i, n := range list {
			if n == "" {
				return elements.Errorf(key, "entry %d is empty", i+1)
			}
			if j, dup := seen[n]; dup {
				return elements.Errorf(key, "%q is both port %d and port %d", n, j, base+i)
			}
			seen[n] = base + i
		}
	}
	t, err := parseKernelTable(c.KernelTable)
	if err != nil {
		return elements.Errorf(c.ktableKey(), "%v", err)
	}
	c.ktable = t
	return nil
}

// checkOffload checks the offload key's shape; the devices are resolved
// when the table is built.
func (c *Config) checkOffload() error {
	if len(c.Offload) > c.ports {
		return elements.Errorf("offload", "%d devices for %d output ports: one per port, in port order (\"\" for a port that is not offloaded)", len(c.Offload), c.ports)
	}
	named := false
	for _, n := range c.Offload {
		named = named || n != ""
	}
	if len(c.Offload) > 0 && !named {
		return elements.Errorf("offload", "names no device")
	}
	return nil
}

func parseKernelTable(s string) (int, error) {
	switch s {
	case "", "main":
		return 254, nil
	case "local":
		return 255, nil
	case "default":
		return 253, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 1<<31-1 {
		return 0, errBadTable(s)
	}
	return n, nil
}

type errBadTable string

func (e errBadTable) Error() string {
	return strconv.Quote(string(e)) + ": want main, local, default or a table number"
}

// Ports is the number of output ports the table's routes name (with
// source = "kernel": one per interface and interfaces6 entry); a lookup
// reading the table has at least as many outputs.
func (c *Config) Ports() int { return c.ports }

// Parsed are the routes Validate read (none with source = "kernel"); they
// must not be changed.
func (c *Config) Parsed() []route.Route { return c.routes }

// Checked reports that Parsed passed route.Precheck.
func (c *Config) Checked() bool { return c.checked }

// Set is what the routes were loaded from, for the router's SetCache.
func (c *Config) Set() route.Set { return c.set }

// Limits are the table's limits.
func (c *Config) Limits() route.Limits { return c.limits }

// Kernel reports source = "kernel".
func (c *Config) Kernel() bool { return c.kernel }

// SourceName is "kernel" or "config".
func (c *Config) SourceName() string {
	if c.kernel {
		return "kernel"
	}
	return "config"
}

// KernelOptions are the kernel mirror's options (source = "kernel").
func (c *Config) KernelOptions() kernelmirror.Options {
	return kernelmirror.Options{Table: c.ktable, Interfaces: c.Interfaces, Interfaces6: c.Interfaces6, NetNS: c.NetNS, Family: c.fam}
}

// FamilyNumber is 4 or 6 for a table of one family, 0 for both.
func (c *Config) FamilyNumber() int { return c.fam }

// HasFamily reports whether the table holds routes of a's family.
func (c *Config) HasFamily(a netip.Addr) bool {
	switch c.fam {
	case 4:
		return a.Is4() || a.Is4In6()
	case 6:
		return a.Is6() && !a.Is4In6()
	}
	return true
}

// OffloadDevices implements offloadkey.Namer: the devices the table's
// fast-path mirror programs.
func (c *Config) OffloadDevices() []string { return c.Offload }
