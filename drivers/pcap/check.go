package pcap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/junction-dataplane/junction/drivers"
	"github.com/junction-dataplane/junction/elements"
)

func init() { drivers.RegisterCheck("pcap", check) }

// check is what open checks, without creating the write file: read or
// write given, loop only with a read file, the read file a readable pcap,
// the write file's directory writable and the write file not the read one.
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
		return info, elements.Errorf("loop", "loop needs a read file")
	}
	var readPath string
	if c.Read != "" {
		d := &Device{readPath: resolve(ctx.BaseDir, c.Read)}
		if err := d.openRead(); err != nil {
			return info, elements.Errorf("read", "%v", err)
		}
		d.rf.Close()
		readPath = d.readPath
	}
	if c.Write != "" {
		w := resolve(ctx.BaseDir, c.Write)
		if w == readPath {
			return info, elements.Errorf("write", "%s is also the read file", w)
		}
		if st, err := os.Stat(w); err == nil {
			if st.IsDir() {
				return info, elements.Errorf("write", "%s is a directory", w)
			}
			if unix.Access(w, unix.W_OK) != nil {
				return info, elements.Errorf("write", "%s is not writable", w)
			}
		}
		dir := filepath.Dir(w)
		st, err := os.Stat(dir)
		switch {
		case err != nil:
			return info, elements.Errorf("write", "%s: directory %v", w, err)
		case !st.IsDir():
			return info, elements.Errorf("write", "%s: %s is not a directory", w, dir)
		case unix.Access(dir, unix.W_OK) != nil:
			return info, elements.Errorf("write", "%s: directory %s is not writable", w, dir)
		}
	}
	return info, nil
}
