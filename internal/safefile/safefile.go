// Package safefile opens the files Junction reads or writes on request
// (a graph's pcap files and Conntrack state files, capture -w) without
// letting the name do more than the caller means: a read never waits on a
// FIFO or reads a device, and a write never follows a symbolic link nor
// truncates a file through another name; a file another user planted in a
// shared directory (a link in /tmp to something the forwarder can write)
// is refused, not written through.
package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Kind names the kind of a file that is not a regular one ("a FIFO").
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "of mode " + m.Type().String()
}

// NotRegularError is the error for a file that is not a regular one.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	if e.Mode&fs.ModeSymlink != 0 {
		return fmt.Sprintf("%s is a symbolic link: not followed (name the file itself)", e.Path)
	}
	return fmt.Sprintf("%s: not a regular file but %s", e.Path, Kind(e.Mode))
}

// OpenRegular opens path for reading if it is a regular file (symbolic
// links followed: reading through one writes nothing). A FIFO is opened
// without waiting for a writer and refused, as are devices, directories
// and sockets, so that a read of a named file always ends.
func OpenRegular(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &NotRegularError{Path: path, Mode: modeOf(st.Mode)}
	}
	// Back to blocking reads (for a regular file O_NONBLOCK changes
	// nothing, but the descriptor should say what it is).
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// CheckRegular reports, without opening it, whether path names a regular
// file (links followed); a missing file is its fs.ErrNotExist.
func CheckRegular(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return nil
}

func modeOf(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFLNK:
		return fs.ModeSymlink
	}
	return 0
}

// CreateExcl creates path for writing; it must not exist, not even as a
// dangling symbolic link (O_EXCL|O_NOFOLLOW).
func CreateExcl(path string, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, perm)
	if errors.Is(err, fs.ErrExist) {
		return nil, &ExistError{Path: path}
	}
	return f, err
}

// ExistError is CreateExcl's error for a name already taken (by a file
// or a link); it is an fs.ErrExist.
type ExistError struct{ Path string }

func (e *ExistError) Error() string { return e.Path + " exists: not overwritten" }
func (e *ExistError) Unwrap() error { return fs.ErrExist }

// CheckReplace reports whether Replace could put a new file at path: it
// is absent or a regular file (not a link, device, FIFO or directory)
// that this process may replace, and its directory exists and is
// writable.
func CheckReplace(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fi = nil
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("%s: directory %v", path, err)
	case !st.IsDir():
		return fmt.Errorf("%s: %s is not a directory", path, dir)
	case unix.Access(dir, unix.W_OK) != nil:
		return fmt.Errorf("%s: directory %s is not writable", path, dir)
	}
	// In a sticky directory (/tmp) only a file's owner, the directory's
	// or root may replace it: another user's file there is refused now
	// rather than by the rename.
	if fi != nil && st.Mode()&fs.ModeSticky != 0 {
		uid := os.Geteuid()
		fst, ok1 := fi.Sys().(*syscall.Stat_t)
		dst, ok2 := st.Sys().(*syscall.Stat_t)
		if ok1 && ok2 && uid != 0 && int(fst.Uid) != uid && int(dst.Uid) != uid {
			return fmt.Errorf("%s belongs to uid %d in sticky directory %s: not replaced", path, fst.Uid, dir)
		}
	}
	return nil
}

// Replace creates a new file at path: a fresh file in path's directory
// (created exclusively, mode perm under the umask) renamed over path, so
// that a file already there is replaced, never truncated or written
// through (a hard link to it elsewhere keeps its content), and a symbolic
// link, a FIFO, a device or a directory at path is refused. The file is
// returned open; the rename has happened when Replace returns.
func Replace(path string, perm fs.FileMode) (*os.File, error) {
	if err := CheckReplace(path); err != nil {
		return nil, err
	}
	f, tmp, err := createTemp(path, perm)
	if err != nil {
		return nil, err
	}
	// Checked again just before the rename: what was put at path since
	// is refused rather than replaced (rename does not follow a link at
	// path, it would replace it).
	if err := CheckReplace(path); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	return f, nil
}

// createTemp creates a new file next to path, exclusively.
func createTemp(path string, perm fs.FileMode) (*os.File, string, error) {
	dir, base := filepath.Split(path)
	for range 100 {
		tmp := filepath.Join(dir, "."+base+".tmp"+strconv.FormatUint(uint64(rand.Uint32()), 36))
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, tmp, err
	}
	return nil, "", fmt.Errorf("%s: no free temporary name in %s", path, dir)
}

// WriteAtomic writes a new file at path with write: into a fresh file in
// path's directory (created exclusively, mode perm under the umask),
// renamed over path once written and closed, so that path is either the
// old file or the whole new one, and nothing is written through a link
// (a planted one at path or at a fixed temporary name). What
// CheckReplace refuses at path is refused.
func WriteAtomic(path string, perm fs.FileMode, write func(*os.File) error) error {
	if err := CheckReplace(path); err != nil {
		return err
	}
	f, tmp, err := createTemp(path, perm)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = CheckReplace(path)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
