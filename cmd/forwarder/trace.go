package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/elements/classifier"
	"github.com/junction-dataplane/junction/internal/control"
	"github.com/junction-dataplane/junction/internal/safefile"
)

// Limits of one trace or capture.
const (
	maxTracePackets   = 10000
	defaultTraceN     = 10
	defaultTraceWait  = 10 * time.Second
	traceDrainTimeout = 200 * time.Millisecond
)

// traceStep is one hop of a traced packet.
type traceStep struct {
	Element string `json:"element"`
	Port    int    `json:"port"` // the output port it left by
	To      string `json:"to,omitempty"`
	InPort  int    `json:"in_port"`
}

// tracedPacket is one packet of a trace.
type tracedPacket struct {
	Worker   int         `json:"worker"`
	Device   string      `json:"device"`
	Queue    int         `json:"queue"`
	AgeNanos int64       `json:"at_ns"` // since the trace was armed
	Headers  []string    `json:"headers"`
	Path     []traceStep `json:"path"`
	// Result: "sent", "dropped", "held" (kept by an element past the
	// round: ARPQuerier waiting for a resolution) or "consumed".
	Result string `json:"result"`
	// Where the packet ended and, for a drop or a consumption under a
	// reason (Discard), why.
	At       string   `json:"at,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	Final    []string `json:"final_headers,omitempty"` // as it last left an element, when rewritten
	Frame    []byte   `json:"frame"`
	Captured string   `json:"captured_at,omitempty"`
}

// traceResult is what `trace` and `capture` answer.
type traceResult struct {
	Filter    string         `json:"filter"`
	Requested int            `json:"requested"`
	Packets   []tracedPacket `json:"packets"`
	TimedOut  bool           `json:"timed_out"`
	Lost      uint64         `json:"lost,omitempty"` // records that did not fit the channel
}

// decodeFrame describes each header of an Ethernet frame, one line per
// layer (gopacket's decoders: off the workers, so their cost is fine).
func decodeFrame(b []byte) []string {
	p := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.DecodeOptions{NoCopy: true, Lazy: false})
	var out []string
	for _, l := range p.Layers() {
		switch h := l.(type) {
		case *layers.Ethernet:
			out = append(out, fmt.Sprintf("Ethernet %v > %v %v", h.SrcMAC, h.DstMAC, h.EthernetType))
		case *layers.Dot1Q:
			out = append(out, fmt.Sprintf("802.1Q vlan %d %v", h.VLANIdentifier, h.Type))
		case *layers.ARP:
			op := "request"
			if h.Operation == layers.ARPReply {
				op = "reply"
			}
			out = append(out, fmt.Sprintf("ARP %s sender %v (%v) target %v (%v)", op,
				ipString(h.SourceProtAddress), macString(h.SourceHwAddress), ipString(h.DstProtAddress), macString(h.DstHwAddress)))
		case *layers.IPv4:
			out = append(out, fmt.Sprintf("IPv4 %v > %v ttl %d proto %v len %d id %d", h.SrcIP, h.DstIP, h.TTL, h.Protocol, h.Length, h.Id))
		case *layers.IPv6:
			out = append(out, fmt.Sprintf("IPv6 %v > %v hlim %d next %v len %d", h.SrcIP, h.DstIP, h.HopLimit, h.NextHeader, h.Length))
		case *layers.TCP:
			out = append(out, fmt.Sprintf("TCP %d > %d [%s] seq %d ack %d win %d", h.SrcPort, h.DstPort, tcpFlags(h), h.Seq, h.Ack, h.Window))
		case *layers.UDP:
			out = append(out, fmt.Sprintf("UDP %d > %d len %d", h.SrcPort, h.DstPort, h.Length))
		case *layers.ICMPv4:
			out = append(out, fmt.Sprintf("ICMP %v id %d seq %d", h.TypeCode, h.Id, h.Seq))
		case *layers.ICMPv6:
			out = append(out, fmt.Sprintf("ICMPv6 %v", h.TypeCode))
		case *gopacket.Payload:
			out = append(out, fmt.Sprintf("payload %d bytes", len(*h)))
		case *gopacket.DecodeFailure:
			out = append(out, fmt.Sprintf("undecodable: %v", h.Error()))
		default:
			out = append(out, l.LayerType().String())
		}
	}
	return out
}

func ipString(b []byte) string {
	if len(b) == 4 {
		return fmt.Sprintf("%d.%d.%d.%d", b[0], b[1], b[2], b[3])
	}
	return fmt.Sprintf("%x", b)
}

func macString(b []byte) string {
	if len(b) != 6 {
		return fmt.Sprintf("%x", b)
	}
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5])
}

func tcpFlags(h *layers.TCP) string {
	var f []string
	for _, x := range []struct {
		on   bool
		name string
	}{{h.SYN, "S"}, {h.FIN, "F"}, {h.RST, "R"}, {h.PSH, "P"}, {h.ACK, "."}, {h.URG, "U"}} {
		if x.on {
			f = append(f, x.name)
		}
	}
	return strings.Join(f, "")
}

// traceArgs parses -n, -timeout and the filter of trace and capture.
func traceArgs(name string, args []string, extra func(fs *flag.FlagSet)) (n int, timeout time.Duration, filter *classifier.Filter, err error) {
	fs := argFlags(name)
	np := fs.Int("n", defaultTraceN, "packets to trace")
	tp := fs.Duration("timeout", defaultTraceWait, "give up after this long")
	if extra != nil {
		extra(fs)
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 0, 0, nil, err
	}
	if *np < 1 || *np > maxTracePackets {
		return 0, 0, nil, control.Usagef("%s: -n %d: want 1..%d", name, *np, maxTracePackets)
	}
	if *tp <= 0 {
		return 0, 0, nil, control.Usagef("%s: -timeout %v: want a positive duration", name, *tp)
	}
	filter, err = classifier.ParseFilter(strings.Join(pos, " "))
	if err != nil {
		return 0, 0, nil, control.Usagef("%s: %v", name, err)
	}
	return *np, *tp, filter, nil
}

// collect arms s, gathers its records until n arrived, the timeout, or
// the client leaves, and disarms it.
func (cs *ctlServer) collect(ctx context.Context, s *elements.TraceSession, n int, timeout time.Duration) ([]*elements.TraceRecord, bool, error) {
	tr := cs.r.Tracer()
	if err := tr.Arm(s); err != nil {
		return nil, false, err
	}
	var recs []*elements.TraceRecord
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	timedOut := false
loop:
	for len(recs) < n {
		select {
		case r := <-s.Out:
			recs = append(recs, r)
		case <-timer.C:
			timedOut = true
			break loop
		case <-ctx.Done():
			break loop
		case <-cs.r.Done():
			break loop
		}
	}
	tr.Disarm(s)
	// Packets marked in rounds still running arrive at their round's
	// end; a packet an element holds (ARPQuerier) arrives when it leaves
	// it, or after elements.HoldTraceFor.
	armed := n - int(s.Left())
	drain := time.NewTimer(traceDrainTimeout + time.Duration(elements.HoldTraceFor))
	defer drain.Stop()
	for len(recs) < armed {
		select {
		case r := <-s.Out:
			recs = append(recs, r)
		case <-drain.C:
			return recs, timedOut, nil
		case <-ctx.Done():
			return recs, timedOut, nil
		}
	}
	return recs, timedOut, nil
}

func (cs *ctlServer) trace(ctx context.Context, args []string) (any, error) {
	n, timeout, filter, err := traceArgs("trace", args, nil)
	if err != nil {
		return nil, err
	}
	s := elements.NewTraceSession(n)
	s.Trace = true
	return cs.runTrace(ctx, s, filter, n, timeout, cs.describe)
}

// runTrace runs session s on the packets filter matches (collect) and
// returns its traceResult, each record as describe tells it (start: when
// the session began).
func (cs *ctlServer) runTrace(ctx context.Context, s *elements.TraceSession, filter *classifier.Filter, n int, timeout time.Duration,
	describe func(r *elements.TraceRecord, start int64) tracedPacket) (any, error) {
	if filter.String() != "-" {
		s.Match = filter.MatchPacket
	}
	start := elements.Nanotime()
	recs, timedOut, err := cs.collect(ctx, s, n, timeout)
	if err != nil {
		return nil, err
	}
	res := &traceResult{Filter: filter.String(), Requested: n, TimedOut: timedOut, Lost: s.Lost.Load(), Packets: []tracedPacket{}}
	for _, r := range recs {
		res.Packets = append(res.Packets, describe(r, start))
	}
	return res, nil
}

func (cs *ctlServer) elementName(i int) string {
	if i < 0 || i >= len(cs.graph().Elements) {
		return "?"
	}
	return cs.graph().Elements[i].Name
}

func (cs *ctlServer) describe(r *elements.TraceRecord, start int64) tracedPacket {
	tp := tracedPacket{Worker: r.Worker, Queue: r.InQueue, AgeNanos: r.Time - start, Headers: decodeFrame(r.Frame), Frame: r.Frame, Path: []traceStep{}}
	if r.InDevice < len(cs.graph().Devices) {
		tp.Device = cs.graph().Devices[r.InDevice].Name
	}
	for _, h := range r.Hops {
		st := traceStep{Element: cs.elementName(h.From), Port: h.Port, InPort: h.InPort}
		if h.To >= 0 {
			st.To = cs.elementName(h.To)
		}
		tp.Path = append(tp.Path, st)
	}
	switch {
	case r.Drop != nil && r.Drop.Consumed:
		// Freed by design under a consumption reason (Discard's).
		tp.Result, tp.At, tp.Reason = "consumed", cs.elementName(r.Drop.Element), r.Drop.Reason
	case r.Drop != nil:
		tp.Result, tp.At, tp.Reason = "dropped", cs.elementName(r.Drop.Element), r.Drop.Reason
	case len(r.Hops) == 0:
		tp.Result = "consumed"
	default:
		last := r.Hops[len(r.Hops)-1]
		tp.At = cs.elementName(last.To)
		switch e := cs.graph().Elements[max(last.To, 0)]; {
		case last.To < 0:
			tp.Result = "dropped"
		case e.Type != nil && e.Type.Name == "ToDevice":
			tp.Result = "sent"
			if d := e.Device(); d != "" {
				tp.At = "device " + d
			}
		case r.Held:
			tp.Result = "held"
			tp.Reason = fmt.Sprintf("still held after %v (ARPQuerier: waiting for the next hop's resolution)", time.Duration(elements.HoldTraceFor))
		default:
			tp.Result = "consumed"
		}
	}
	if r.Last != nil && string(r.Last) != string(r.Frame) {
		tp.Final = decodeFrame(r.Last)
	}
	return tp
}

func (cs *ctlServer) capture(ctx context.Context, args []string) (any, error) {
	var el *string
	var port *int
	n, timeout, filter, err := traceArgs("capture", args, func(fs *flag.FlagSet) {
		el = fs.String("element", "", "the element whose output to capture")
		port = fs.Int("port", -1, "only this output port (default: every port)")
	})
	if err != nil {
		return nil, err
	}
	if *el == "" {
		return nil, control.Usagef("capture: -element NAME is required")
	}
	i := cs.r.ElementIndex(*el)
	if i < 0 {
		var names []string
		for _, e := range cs.graph().Elements {
			names = append(names, e.Name)
		}
		msg := fmt.Sprintf("capture: -element %s: no such element", *el)
		if s := nearest(*el, names); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return nil, control.Usagef("%s", msg)
	}
	if e := cs.graph().Elements[i]; e.Out == 0 {
		return nil, control.Usagef("capture: -element %s: it has no output ports (a sink): capture the element that feeds it", *el)
	} else if *port >= e.Out || *port < -1 {
		return nil, control.Usagef("capture: -port %d: %s has output ports 0..%d", *port, e.Name, e.Out-1)
	}
	s := elements.NewTraceSession(n)
	s.CaptureElement, s.CapturePort = i, *port
	return cs.runTrace(ctx, s, filter, n, timeout, func(r *elements.TraceRecord, start int64) tracedPacket {
		return tracedPacket{Worker: r.Worker, Queue: r.InQueue, AgeNanos: r.Time - start,
			Frame: r.Frame, Captured: fmt.Sprintf("%s[%d]", cs.elementName(r.CaptureElement), r.CapturePort)}
	})
}

// --- client ---

func traceCmd(args []string, stdout, stderr io.Writer) error {
	cl, rest, err := clientArgs("trace", args, stderr)
	if err != nil {
		return err
	}
	data, err := cl.call("trace", rest)
	if err != nil {
		return err
	}
	if cl.format == "json" {
		return writeJSON(stdout, data)
	}
	var r traceResult
	if err := json.Unmarshal(data, &r); err != nil {
		return err
	}
	for i, p := range r.Packets {
		fmt.Fprintf(stdout, "packet %d: +%s worker %d, device %s queue %d\n", i+1, time.Duration(p.AgeNanos).Round(time.Microsecond), p.Worker, p.Device, p.Queue)
		for _, h := range p.Headers {
			fmt.Fprintf(stdout, "    %s\n", h)
		}
		for _, st := range p.Path {
			to := st.To
			if to == "" {
				to = "(unconnected)"
			}
			fmt.Fprintf(stdout, "  %s [%d] -> [%d] %s\n", st.Element, st.Port, st.InPort, to)
		}
		switch p.Result {
		case "dropped":
			fmt.Fprintf(stdout, "  dropped by %s: %s\n", p.At, p.Reason)
		case "sent":
			fmt.Fprintf(stdout, "  sent on %s\n", strings.TrimPrefix(p.At, "device "))
		case "held":
			fmt.Fprintf(stdout, "  held by %s: %s\n", p.At, p.Reason)
		default:
			if p.Reason != "" {
				fmt.Fprintf(stdout, "  consumed by %s: %s\n", p.At, p.Reason)
			} else {
				fmt.Fprintf(stdout, "  consumed by %s\n", p.At)
			}
		}
		if len(p.Final) > 0 {
			fmt.Fprintf(stdout, "  as it left:\n")
			for _, h := range p.Final {
				fmt.Fprintf(stdout, "    %s\n", h)
			}
		}
	}
	return traceSummary(stdout, stderr, &r)
}

func traceSummary(stdout, stderr io.Writer, r *traceResult) error {
	fmt.Fprintf(stdout, "%d of %d packets matching %q", len(r.Packets), r.Requested, r.Filter)
	if r.TimedOut {
		fmt.Fprint(stdout, " (timed out)")
	}
	if r.Lost > 0 {
		fmt.Fprintf(stdout, ", %d lost", r.Lost)
	}
	fmt.Fprintln(stdout)
	return nil
}

func captureCmd(args []string, stdout, stderr io.Writer) error {
	cl, rest, err := clientArgs("capture", args, stderr)
	if err != nil {
		return err
	}
	// -w and -force are the client's: the file is written here, not by
	// the server.
	file, force := "", false
	var send []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "-force" || a == "--force" {
			force = true
			continue
		}
		if a == "-w" || a == "--w" {
			if i+1 >= len(rest) {
				return cl.usage("flag needs an argument: -w")
			}
			file = rest[i+1]
			i++
			continue
		}
		if v, ok := strings.CutPrefix(a, "-w="); ok {
			file = v
			continue
		}
		send = append(send, a)
	}
	if file == "" {
		return cl.usage("-w FILE.pcap is required")
	}
	// Refused before the capture waits for its packets; checked again
	// when the file is made.
	if err := checkCaptureFile(file, force); err != nil {
		return err
	}
	data, err := cl.call("capture", send)
	if err != nil {
		return err
	}
	var r traceResult
	if err := json.Unmarshal(data, &r); err != nil {
		return err
	}
	if err := writePcap(file, force, &r); err != nil {
		return err
	}
	if cl.format == "json" {
		return writeJSON(stdout, data)
	}
	fmt.Fprintf(stdout, "%s: ", file)
	return traceSummary(stdout, stderr, &r)
}

// checkCaptureFile refuses a -w file that exists, unless force allows
// replacing a regular file (never a symbolic link: a link planted in a
// shared directory would otherwise point the write at another file).
func checkCaptureFile(file string, force bool) error {
	if force {
		return safefile.CheckReplace(file)
	}
	if _, err := os.Lstat(file); err == nil {
		return fmt.Errorf("%s exists: not overwritten (-force replaces a regular file)", file)
	}
	return nil
}

// writePcap writes the capture to a file it creates: exclusively, or with
// force a new file renamed over the old one; either way no link is
// followed and no other file is truncated.
func writePcap(file string, force bool, r *traceResult) (err error) {
	var f *os.File
	if force {
		f, err = safefile.Replace(file, 0o644)
	} else {
		f, err = safefile.CreateExcl(file, 0o644)
		if errors.Is(err, fs.ErrExist) {
			err = fmt.Errorf("%v (-force replaces a regular file)", err)
		}
	}
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		return err
	}
	base := time.Now()
	if len(r.Packets) > 0 {
		base = base.Add(-time.Duration(r.Packets[len(r.Packets)-1].AgeNanos))
	}
	for _, p := range r.Packets {
		ci := gopacket.CaptureInfo{Timestamp: base.Add(time.Duration(p.AgeNanos)), CaptureLength: len(p.Frame), Length: len(p.Frame)}
		if err := w.WritePacket(ci, p.Frame); err != nil {
			return err
		}
	}
	if len(r.Packets) == 0 && !r.TimedOut {
		return errors.New("no packets captured")
	}
	return nil
}
