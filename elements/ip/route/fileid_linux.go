package route

import (
	"os"
	"syscall"
)

// fileIdentity stats file: device, inode, size, modification and change
// times.
func fileIdentity(file string) (fileID, bool) {
	fi, err := os.Stat(file)
	if err != nil {
		return fileID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), size: st.Size,
		mtime: fi.ModTime().UnixNano(), ctime: st.Ctim.Nano()}, true
}
