package host

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// resolvePath finds the executable (a bare name in $PATH, anything else
// from the current directory) and checks it as checkExecutable does; it
// returns the absolute path as written, symbolic links kept, so that each
// start follows them anew.
func resolvePath(p string) (string, error) {
	if p == "" {
		return "", errors.New("required: the plugin executable")
	}
	if !strings.ContainsRune(p, '/') {
		lp, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%q: not found in $PATH (write ./%s for a file in the current directory)", p, p)
		}
		p = lp
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if _, _, err := checkExecutable(abs); err != nil {
		return "", err
	}
	return abs, nil
}

// checkExecutable refuses an executable that anyone but root and the
// forwarder's own user could have replaced, as OpenSSH does for the files
// it executes (sshd's safe_path): the file and every directory above it, up
// to the root, must be owned by root or by this user and writable by
// neither group nor others; a directory with the sticky bit (/tmp) may be
// writable by others, since they cannot rename or remove what they do not
// own there. Symbolic links are followed and both the link's directories
// and the target's are checked. It returns the target's path and what it
// found there: the file to execute. It runs before every start, not only at load, so a plugin that
// becomes replaceable while the forwarder runs is not restarted.
func checkExecutable(abs string) (string, os.FileInfo, error) {
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil, fmt.Errorf("%s: no such file (build the plugin first, e.g. go build -o %s ./path/to/plugin)", abs, abs)
		}
		return "", nil, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", nil, err
	}
	if !fi.Mode().IsRegular() {
		return "", nil, fmt.Errorf("%s: not a regular file", abs)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return "", nil, fmt.Errorf("%s: not executable", abs)
	}
	uid := uint32(os.Geteuid())
	if err := safeOwner(fi, uid); err != nil {
		return "", nil, fmt.Errorf("%s: refused: the file is %v: anyone who owns it could replace the code the forwarder runs", abs, err)
	}
	if w := writableBy(fi.Mode()); w != "" {
		return "", nil, fmt.Errorf("%s: refused: the file is %s-writable (mode %v): anyone could replace the code the forwarder runs", abs, w, fi.Mode().Perm())
	}
	dirs := []string{filepath.Dir(real)}
	if real != abs {
		dirs = append(dirs, filepath.Dir(abs))
	}
	for _, d := range dirs {
		if err := checkDirs(abs, d, uid); err != nil {
			return "", nil, err
		}
	}
	return real, fi, nil
}

// checkDirs checks dir and each of its parents up to the root.
func checkDirs(abs, dir string, uid uint32) error {
	for {
		di, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("%s: directory %s: %v", abs, dir, err)
		}
		if err := safeOwner(di, uid); err != nil {
			return fmt.Errorf("%s: refused: directory %s is %v: its owner could replace the plugin", abs, dir, err)
		}
		if w := writableBy(di.Mode()); w != "" && di.Mode()&os.ModeSticky == 0 {
			return fmt.Errorf("%s: refused: directory %s is %s-writable without the sticky bit (mode %v): anyone could replace the plugin", abs, dir, w, di.Mode().Perm())
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

// safeOwner: owned by root or by uid.
func safeOwner(fi os.FileInfo, uid uint32) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == 0 || st.Uid == uid {
		return nil
	}
	return fmt.Errorf("owned by uid %d, neither root nor the forwarder's user (uid %d)", st.Uid, uid)
}

// writableBy names who besides the owner may write: "world", "group" or "".
func writableBy(m os.FileMode) string {
	switch {
	case m.Perm()&0o002 != 0:
		return "world"
	case m.Perm()&0o020 != 0:
		return "group"
	}
	return ""
}

// openExecutable opens the file checkExecutable resolved and found
// (checked), refusing another one put in its place since, and checks the
// open file's owner and mode again: the open file, not the path, is what
// is hashed and executed, so the file cannot be swapped between the checks
// and the exec.
func openExecutable(real string, checked os.FileInfo) (*os.File, error) {
	fd, err := syscall.Open(real, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", real, err)
	}
	f := os.NewFile(uintptr(fd), real)
	fi, err := f.Stat()
	if err == nil {
		switch {
		case !os.SameFile(fi, checked):
			err = fmt.Errorf("%s: replaced while it was being checked", real)
		case !fi.Mode().IsRegular():
			err = fmt.Errorf("%s: not a regular file", real)
		case fi.Mode().Perm()&0o111 == 0:
			err = fmt.Errorf("%s: not executable", real)
		case writableBy(fi.Mode()) != "":
			err = fmt.Errorf("%s: refused: the file is %s-writable (mode %v)", real, writableBy(fi.Mode()), fi.Mode().Perm())
		default:
			if e := safeOwner(fi, uint32(os.Geteuid())); e != nil {
				err = fmt.Errorf("%s: refused: the file is %v", real, e)
			}
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// fileSHA256 hashes an open file from its start.
func fileSHA256(f *os.File) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, 1<<62)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
