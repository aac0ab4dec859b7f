package sampler

import (
	"bufio"
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/junction-dataplane/junction/internal/safefile"
	"github.com/junction-dataplane/junction/plugins/sdk"
)

// Config is FlowSampler's config.
type Config struct {
	// N: one in N packets (or flows) is written.
	N int `toml:"n"`
	// By is "packet" (every Nth packet) or "flow" (every packet of the
	// flows whose symmetric 5-tuple hash is 0 mod N).
	By string `toml:"by"`
	// File is the pcap file written; "%p" is replaced by the plugin's
	// process id (one process per worker: use it with several workers).
	File string `toml:"file"`
	// Snaplen caps the bytes written per packet.
	Snaplen int `toml:"snaplen"`
}

// NewConfig returns the defaults.
func NewConfig() any { return &Config{N: 100, By: "packet", Snaplen: 65535} }

// Validate checks the keys.
func (c *Config) Validate() error {
	if c.N < 1 {
		return sdk.Errorf("n", "%d: must be at least 1", c.N)
	}
	switch c.By {
	case "packet", "flow":
	default:
		return sdk.Errorf("by", "%q: want \"packet\" or \"flow\"", c.By)
	}
	if c.File == "" {
		return sdk.Errorf("file", "required: the pcap file to write")
	}
	if c.Snaplen < 64 || c.Snaplen > 65535 {
		return sdk.Errorf("snaplen", "%d: want 64..65535", c.Snaplen)
	}
	return nil
}

// Sampler is the element's processor.
type Sampler struct {
	c     *Config
	f     *os.File
	buf   *bufio.Writer
	w     *pcapgo.Writer
	count uint64
}

// New opens the pcap file.
func New(cfg any) (sdk.Processor, error) {
	c := cfg.(*Config)
	name := strings.ReplaceAll(c.File, "%p", strconv.Itoa(os.Getpid()))
	// A new file renamed over the name: a link or a FIFO there is
	// refused rather than written through or waited on.
	f, err := safefile.Replace(name, 0o644)
	if err != nil {
		return nil, sdk.Errorf("file", "%v", err)
	}
	s := &Sampler{c: c, f: f, buf: bufio.NewWriterSize(f, 1<<16)}
	s.w = pcapgo.NewWriter(s.buf)
	if err := s.w.WriteFileHeader(uint32(c.Snaplen), layers.LinkTypeEthernet); err != nil {
		return nil, err
	}
	if err := s.buf.Flush(); err != nil {
		return nil, err
	}
	return s, nil
}

// Process writes the sampled packets and flushes once per batch that wrote
// any (the plugin may be killed at any time; what was flushed survives).
// Packets all go to output 0, unchanged: the element is read-only.
func (s *Sampler) Process(b *sdk.Batch) {
	wrote := false
	now := time.Now()
	for i := range b.Pkts {
		p := &b.Pkts[i]
		take := false
		if s.c.By == "packet" {
			s.count++
			take = s.count%uint64(s.c.N) == 0
		} else {
			take = FlowHash(p.Data)%uint32(s.c.N) == 0
		}
		if !take {
			continue
		}
		data := p.Data
		if len(data) > s.c.Snaplen {
			data = data[:s.c.Snaplen]
		}
		ci := captureInfo(now, len(data), len(p.Data))
		if err := s.w.WritePacket(ci, data); err == nil {
			wrote = true
		}
	}
	if wrote {
		s.buf.Flush()
	}
}

// FlowHash is a symmetric hash of an IPv4 frame's addresses, protocol and
// TCP/UDP ports (0 for anything else), so that both directions of a flow
// are sampled together.
func FlowHash(f []byte) uint32 {
	if len(f) < 34 || binary.BigEndian.Uint16(f[12:]) != 0x0800 {
		return 0
	}
	ip := f[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ihl < 20 || ihl > len(ip) {
		return 0
	}
	a, b := binary.BigEndian.Uint32(ip[12:]), binary.BigEndian.Uint32(ip[16:])
	var pa, pb uint32
	if (ip[9] == 6 || ip[9] == 17) && len(ip) >= ihl+4 {
		pa, pb = uint32(binary.BigEndian.Uint16(ip[ihl:])), uint32(binary.BigEndian.Uint16(ip[ihl+2:]))
	}
	if a > b || (a == b && pa > pb) {
		a, b, pa, pb = b, a, pb, pa
	}
	h := uint32(2166136261)
	for _, v := range [5]uint32{a, b, pa<<16 | pb, uint32(ip[9]), 0} {
		h ^= v
		h *= 16777619
		h ^= h >> 15
	}
	return h
}

// Element describes the plugin element.
func Element() sdk.Element {
	return sdk.Element{
		Name: "FlowSampler",
		Doc: sdk.Doc{
			Synopsis: "FlowSampler(n, by, file, snaplen)",
			Summary:  "passes every packet on and writes 1 in N packets (or flows) to a pcap file",
			Ports:    "input 0: any packets; output 0: the same packets, unchanged.",
			Keys: []sdk.Key{
				{Name: "n", Type: "int", Default: "100", Doc: "one in n packets (or flows) is written"},
				{Name: "by", Type: "string", Default: "packet", Doc: `"packet": every nth packet; "flow": all packets of 1 in n flows (symmetric 5-tuple hash)`},
				{Name: "file", Type: "string", Required: true, Doc: `the pcap file to write (an existing file is replaced by a new one; a symbolic link, a FIFO or a device is refused); "%p" becomes the plugin's pid (one process per worker)`},
				{Name: "snaplen", Type: "int", Default: "65535", Doc: "bytes written per packet at most"},
			},
			Stats:   "none (the file is the output).",
			Example: "[elements.sample]\ntype = \"Plugin\"\npath = \"./bin/sampler\"\nelement = \"FlowSampler\"\non_failure = \"bypass\"\nconfig = { n = 10, file = \"sample.pcap\" }",
		},
		Outputs:   1,
		ReadOnly:  true,
		NewConfig: NewConfig,
		New:       New,
	}
}
