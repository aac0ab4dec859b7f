// Package packaging holds what makes Junction installable as a service:
// the systemd unit junction@.service (one forwarder per graph file
// /etc/junction/NAME.toml, its control socket /run/junction/NAME.sock),
// the Debian package's description for nfpm (nfpm.yaml) and its
// maintainer scripts, and build-deb.sh, which builds the package with the
// forwarder's own man pages and shell completions. docs/install.md is the
// operator's guide.
//
// The Go files are the package's tests: the .deb built by build-deb.sh
// installs into an empty root with dpkg, and the installed forwarder
// checks and runs the installed graphs there (package_test.go).
package packaging
