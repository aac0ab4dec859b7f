package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/junction-dataplane/junction/internal/control"
)

// The client side of the control socket, shared by show, clear, route,
// trace and capture: the flags every one of them takes (-control, -config
// to name the default socket, -format) are taken out of the arguments
// wherever they are, and the rest goes to the server as typed.

type ctlClient struct {
	name   string // the subcommand, for messages
	path   string
	format string
	stderr io.Writer
}

const clientHelp = `  -control PATH     the forwarder's control socket (default: /run/junction/<config name>.sock;
                    the only socket there when there is one)
  -config FILE      the graph file the forwarder runs (names the default socket)
  -format FORMAT    table or json (default table)
`

// clientArgs extracts the common flags from args.
func clientArgs(name string, args []string, stderr io.Writer) (*ctlClient, []string, error) {
	cl := &ctlClient{name: name, format: "table", stderr: stderr}
	var rest []string
	config := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		flagName, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || a == "-" {
			rest = append(rest, a)
			continue
		}
		switch flagName {
		case "h", "help":
			fmt.Fprintf(stderr, "usage: forwarder %s\n\nFlags:\n%s%s", subUsage[name], clientHelp, subFlags[name])
			return nil, nil, flag.ErrHelp
		case "control", "config", "format":
			if !hasVal {
				if i+1 >= len(args) {
					return nil, nil, cl.usage(fmt.Sprintf("flag needs an argument: -%s", flagName))
				}
				i++
				val = args[i]
			}
			switch flagName {
			case "control":
				cl.path = val
			case "config":
				config = val
			case "format":
				cl.format = val
			}
		default:
			rest = append(rest, a)
		}
	}
	if cl.format != "table" && cl.format != "json" {
		return nil, nil, cl.usage(fmt.Sprintf("-format %q: want table or json", cl.format))
	}
	if cl.path == "" {
		cl.path = defaultSocket(config)
	}
	return cl, rest, nil
}

// subUsage is each client command's synopsis; CONTROL stands for the
// flags every client command takes (clientHelp).
var subUsage = map[string]string{
	"show":    "show [CONTROL] flows [-n N] [-count] [FILTER] | routes [-table NAME | -element NAME] [ADDR|PREFIX] | neighbors [-element NAME] | interfaces [DEV...] | runtime [-workers] | errors [-workers] [-all]",
	"clear":   "clear [CONTROL] counters",
	"route":   "route [CONTROL] add|replace PREFIX [via NH]... out PORT|DEVICE... | add|replace PREFIX blackhole|unreachable|prohibit | del PREFIX | reload  [-table NAME | -element NAME]",
	"trace":   "trace [CONTROL] [-n N] [-timeout D] [FILTER]",
	"capture": "capture [CONTROL] -element NAME [-port P] [-n N] [-timeout D] -w FILE.pcap [-force] [FILTER]",
	"reload":  "reload [CONTROL] [-dry-run] | reload -dry-run -running FILE -config FILE",
}

// subFlags lists each client command's own flags for its -h, in the
// flag package's layout (the usage tests read them).
var subFlags = map[string]string{
	"show": `  -n N              show flows: at most N flows (default 100; 0: all)
  -count            show flows: only count the flows
  -table NAME       show routes: the route table (default: the only one, the one of the address's family, or main)
  -element NAME     show routes: the table this IPLookup reads; show neighbors: only this ARPQuerier or NDPQuerier
  -workers          show runtime, errors: one row per worker too
  -all              show errors: also counters that are not drops
`,
	"clear": "",
	"route": `  -table NAME       the route table (default: the only one, the one of the route's family, or main)
  -element NAME     the table this IPLookup reads
`,
	"trace": `  -n N              packets to trace (default 10)
  -timeout D        give up after this long
`,
	"reload": `  -dry-run          print what would change, change nothing
  -running FILE     with -dry-run: compare FILE (what runs) with -config offline, no forwarder needed
`,
	"capture": `  -element NAME     the element whose output to capture (required)
  -port P           only this output port (default: every port)
  -n N              packets to capture
  -timeout D        give up after this long
  -w FILE.pcap      the pcap file to create (required; an existing one is refused)
  -force            replace FILE.pcap if it is a regular file (a link is never followed)
`,
}

// defaultSocket is /run/junction/<config>.sock, or with no -config the only
// socket in /run/junction if there is exactly one.
func defaultSocket(config string) string {
	if config != "" {
		return control.DefaultPath(config)
	}
	if m, _ := filepath.Glob(filepath.Join(control.DefaultDir, "*.sock")); len(m) == 1 {
		return m[0]
	}
	return control.DefaultPath("")
}

// socketsHint names the sockets in the default directory, for a client
// that found none at the path it tried.
func socketsHint() string {
	m, _ := filepath.Glob(filepath.Join(control.DefaultDir, "*.sock"))
	if len(m) == 0 {
		return ""
	}
	return " (sockets in " + control.DefaultDir + ": " + strings.Join(m, ", ") + "; give -control PATH or -config FILE)"
}

// usage reports a malformed command line: exit status 2.
func (cl *ctlClient) usage(msg string) error {
	fmt.Fprintf(cl.stderr, "forwarder %s: %s\nusage: forwarder %s\n", cl.name, msg, subUsage[cl.name])
	return errUsage
}

// call runs a command on the server; Ctrl-C abandons it (a trace stops).
func (cl *ctlClient) call(cmd string, args []string) (json.RawMessage, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	data, err := control.Call(ctx, cl.path, cmd, args)
	if err != nil && control.IsUsage(err) {
		fmt.Fprintf(cl.stderr, "forwarder %s: %v\n", cl.name, err)
		return nil, errUsage
	}
	if err != nil && strings.HasPrefix(err.Error(), "no forwarder at") {
		err = fmt.Errorf("%w%s", err, socketsHint())
	}
	return data, err
}
