package pcap

import (
	"errors"
	"fmt"
	"os"

	"github.com/junction-dataplane/junction/conf"
	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/internal/safefile"
)

func init() { drivers.RegisterCheck("pcap", check) }

// check is what open checks, without creating the write file: read or
// write given, loop only with a read file, the read file a readable pcap
// (a regular file), the write file's directory writable and the write
// file not the read one nor anything but a regular file (checkWrite).
func check(cfg any, ctx drivers.OpenContext) (drivers.Info, error) {
	info := drivers.Info{Name: ctx.Name, Driver: "pcap", MAC: ctx.MAC, Addresses: ctx.Addresses}
	c, ok := cfg.(*Config)
	if !ok {
		return info, fmt.Errorf("pcap: config is %T, want *pcap.Config", cfg)
	}
	if c.Read == "" && c.Write == "" {
		return info, errors.New(`a pcap device needs "read", "write" or both`)
	}
	if c.Loop && c.Read == "" {
		return info, conf.Errorf("loop", "loop needs a read file")
	}
	var readPath string
	var rs os.FileInfo
	if c.Read != "" {
		d := &Device{readPath: resolve(ctx.BaseDir, c.Read)}
		if err := d.openRead(); err != nil {
			return info, conf.Errorf("read", "%v", err)
		}
		rs, _ = d.rf.Stat()
		d.rf.Close()
		readPath = d.readPath
	}
	if c.Write != "" {
		if err := checkWrite(resolve(ctx.BaseDir, c.Write), readPath, rs); err != nil {
			return info, conf.Errorf("write", "%v", err)
		}
	}
	return info, nil
}

// checkWrite is what open and check refuse of a write file: the read file
// (by name or, through another name, by identity: a hard link), and
// whatever safefile.Replace refuses (a symbolic link, even one that loops
// or names the read file, a FIFO, a device, a directory, a directory
// that is missing or not writable).
func checkWrite(w, readPath string, rs os.FileInfo) error {
	if readPath != "" {
		same := w == readPath
		if ws, err := os.Lstat(w); err == nil && rs != nil && os.SameFile(ws, rs) {
			same = true
		}
		if same {
			return fmt.Errorf("%s is also the read file", w)
		}
	}
	return safefile.CheckReplace(w)
}
