package sdk

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"sort"
	"sync"
	"unsafe"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/plugins/internal/wire"
)

// Version is the SDK's version, reported to the forwarder.
const Version = "junction-sdk/1"

// Serve serves the elements to a forwarder and never returns. It must be
// called from main; a plugin executable started by hand prints a note that
// it is meant to be started by the forwarder and exits.
func Serve(elems ...Element) {
	srv, err := newServer(elems)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: wire.Handshake,
		Plugins:         plugin.PluginSet{wire.PluginName: &wire.GRPCPlugin{Impl: srv}},
		GRPCServer:      plugin.DefaultGRPCServer,
		Logger:          hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr}),
	})
}

type server struct {
	elems  []Element
	byName map[string]*Element

	mu     sync.Mutex
	opened bool
}

func newServer(elems []Element) (*server, error) {
	s := &server{elems: elems, byName: map[string]*Element{}}
	for i := range elems {
		e := &elems[i]
		if err := e.check(); err != nil {
			return nil, err
		}
		if _, dup := s.byName[e.Name]; dup {
			return nil, fmt.Errorf("sdk: duplicate element %s", e.Name)
		}
		s.byName[e.Name] = e
	}
	if len(elems) == 0 {
		return nil, errors.New("sdk: Serve with no elements")
	}
	return s, nil
}

func (s *server) Describe(context.Context) (*wire.DescribeResponse, error) {
	r := &wire.DescribeResponse{SDK: Version}
	for i := range s.elems {
		r.Elements = append(r.Elements, s.elems[i].info(nil))
	}
	sort.Slice(r.Elements, func(i, j int) bool { return r.Elements[i].Name < r.Elements[j].Name })
	return r, nil
}

func (s *server) element(name string) (*Element, []wire.KeyErr) {
	e, ok := s.byName[name]
	if !ok {
		msg := fmt.Sprintf("no element %q in this plugin", name)
		if n := conf.Nearest(name, slices.Sorted(maps.Keys(s.byName))); n != "" {
			msg += fmt.Sprintf(", did you mean %q?", n)
		}
		return nil, []wire.KeyErr{{Key: "element", Msg: msg}}
	}
	return e, nil
}

func (s *server) Validate(_ context.Context, req *wire.ValidateRequest) (*wire.ValidateResponse, error) {
	e, errs := s.element(req.Element)
	if errs != nil {
		return &wire.ValidateResponse{Errors: errs}, nil
	}
	cfg, errs := decodeConfig(e, req.Config)
	if errs != nil {
		return &wire.ValidateResponse{Errors: errs}, nil
	}
	info := e.info(cfg)
	return &wire.ValidateResponse{Outputs: info.Outputs}, nil
}

func (s *server) Open(_ context.Context, req *wire.OpenRequest) (*wire.OpenResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opened {
		return nil, errors.New("element already opened in this process")
	}
	e, errs := s.element(req.Element)
	if errs != nil {
		return &wire.OpenResponse{Errors: errs}, nil
	}
	cfg, errs := decodeConfig(e, req.Config)
	if errs != nil {
		return &wire.OpenResponse{Errors: errs}, nil
	}
	proc, err := e.New(cfg)
	if err != nil {
		return &wire.OpenResponse{Errors: []wire.KeyErr{{Msg: err.Error()}}}, nil
	}
	region, err := wire.Map(wire.FDRegion)
	if err != nil {
		return nil, err
	}
	info := e.info(cfg)
	sess := &session{
		r: region, proc: proc, outputs: info.Outputs, reqBell: &wire.Bell{FD: wire.FDReqBell},
		respBell: &wire.Bell{FD: wire.FDRespBel},
	}
	if b, ok := proc.(slotBinder); ok {
		if err := b.bindSlots(region.Slots()); err != nil {
			return nil, err
		}
	}
	s.opened = true
	go sess.loop()
	return &wire.OpenResponse{Info: info}, nil
}

// slotBinder is implemented by processors that need the slot memory itself
// (the Builtin adapter builds a packet pool over it).
type slotBinder interface {
	bindSlots(mem []byte) error
}

// session serves batches from the shared region.
type session struct {
	r        *wire.Region
	proc     Processor
	outputs  int
	reqBell  *wire.Bell
	respBell *wire.Bell
	batch    Batch
	pkts     [wire.MaxBatch]Packet
}

// spinRounds is how long the plugin spins on the request word before it
// blocks on the doorbell: a few tens of microseconds, long enough to catch
// the next batch of a busy stream without a wake-up, short enough not to
// burn a core on an idle one.
const spinRounds = 1 << 15

func (s *session) loop() {
	runtime.LockOSThread()
	// The host resets the control words before it starts a plugin and
	// numbers batches from 1, so the last batch seen is 0 — not whatever
	// the request word holds when this goroutine first runs: Open has
	// returned by then, and on a loaded machine the host may already have
	// written batch 1, which reading the word here would skip (the batch
	// would then time out).
	var last uint32
	for {
		seq := s.wait(last)
		last = seq
		s.serve()
		s.r.Resp().Store(seq)
		if s.r.HostSleeps().Load() != 0 {
			s.respBell.Ring()
		}
	}
}

func (s *session) wait(last uint32) uint32 {
	req := s.r.Req()
	for i := 0; i < spinRounds; i++ {
		if v := req.Load(); v != last {
			return v
		}
		if i&7 == 7 {
			unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		}
	}
	sleeps := s.r.PluginSleeps()
	for {
		sleeps.Store(1)
		if v := req.Load(); v != last {
			sleeps.Store(0)
			return v
		}
		var buf [8]byte
		_, err := unix.Read(s.reqBell.FD, buf[:])
		sleeps.Store(0)
		if err != nil && err != unix.EINTR && err != unix.EAGAIN {
			// The doorbell is gone: the forwarder closed it. Nothing
			// more will come.
			os.Exit(0)
		}
		if v := req.Load(); v != last {
			return v
		}
	}
}

// serve runs one batch: descriptors in, Process, descriptors out.
func (s *session) serve() {
	r := s.r
	n := int(r.Count())
	if n > wire.MaxBatch {
		r.SetStatus(wire.StatusBad)
		return
	}
	r.SetStatus(wire.StatusOK)
	s.batch.In = int(r.InPort())
	s.batch.Pkts = s.pkts[:n]
	for i := 0; i < n; i++ {
		d := r.Desc(i)
		slot := r.Slot(i)
		off, ln := d.Off(), d.Len()
		if off > wire.SlotSize || ln > wire.SlotSize-off {
			r.SetStatus(wire.StatusBad)
			return
		}
		p := &s.pkts[i]
		p.Data = slot[off : off+ln]
		p.home = unsafe.SliceData(slot[off:])
		p.room = wire.SlotSize - off
		p.InDevice, p.InQueue, p.L3, p.FlowHash = d.InDevice(), d.InQueue(), d.L3(), d.FlowHash()
		p.port = 0
	}
	s.proc.Process(&s.batch)
	for i := 0; i < n; i++ {
		p := &s.pkts[i]
		d := r.Desc(i)
		ln := p.finish()
		port := p.port
		if ln < 0 {
			port, ln = genericDrop, 0
		}
		d.SetPort(port)
		d.SetLen(ln)
		p.Data = nil
	}
	if wire.AfterServe != nil {
		wire.AfterServe(r)
	}
}
