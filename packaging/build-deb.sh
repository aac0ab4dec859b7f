#!/usr/bin/env bash
# Builds Junction's Debian package: packaging/build-deb.sh [OUTDIR]
# (default dist/), printing the .deb's path.
#
# It builds a static forwarder, writes the man pages and the bash, zsh and
# fish completions with that forwarder (forwarder man, forwarder
# completion: from its own flag sets), stages them with the systemd unit,
# the docs and the example graphs, and runs nfpm (goreleaser's packager,
# the version pinned below, fetched by `go run` through the Go module
# proxy) on packaging/nfpm.yaml.
#
# Environment: JUNCTION_VERSION (default: 0.0.0~gitYYYYMMDD.REV from the
# checkout's last commit, else 0.0.0), GOARCH (default: this machine's),
# DEB_MAINTAINER (default: git's user.name <user.email>),
# JUNCTION_CONFIGS (the graphs installed in /etc/junction; default: the
# contract configs present in configs/), SOURCE_DATE_EPOCH (file times;
# default: the last commit's).
set -euo pipefail

NFPM=github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.48.0

src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$src/dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$src"

export GOARCH=${GOARCH:-$(go env GOARCH)}
rev=$(git log -1 --format='%cd.%h' --date=format:%Y%m%d 2>/dev/null || true)
export JUNCTION_VERSION=${JUNCTION_VERSION:-0.0.0${rev:+~git$rev}}
if [ -z "${DEB_MAINTAINER:-}" ]; then
	name=$(git config user.name 2>/dev/null || echo "Junction developers")
	email=$(git config user.email 2>/dev/null || echo "root@localhost")
	DEB_MAINTAINER="$name <$email>"
fi
export DEB_MAINTAINER
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
usr=$stage/usr

# The binary: static (no libc to depend on), paths trimmed, no symbol
# table (as Debian strips binaries; panics still print stack traces).
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$usr/bin/forwarder" ./cmd/forwarder
gen=$usr/bin/forwarder
if [ "$GOARCH" != "$(GOARCH= go env GOARCH)" ]; then
	# Cross-built: the pages come from a forwarder this machine runs.
	gen=$stage/forwarder-host
	GOARCH= CGO_ENABLED=0 go build -o "$gen" ./cmd/forwarder
fi

# Man pages and completions, from the forwarder's own flag sets.
"$gen" man -dir "$usr/share/man/man1" >/dev/null
gzip -9n "$usr"/share/man/man1/*.1
install -d "$usr/share/bash-completion/completions" "$usr/share/zsh/vendor-completions" "$usr/share/fish/vendor_completions.d"
"$gen" completion bash >"$usr/share/bash-completion/completions/forwarder"
"$gen" completion zsh >"$usr/share/zsh/vendor-completions/_forwarder"
"$gen" completion fish >"$usr/share/fish/vendor_completions.d/forwarder.fish"
rm -f "$stage/forwarder-host"

# The unit, the docs and the example graphs.
install -D -m 644 "packaging/junction@.service" "$usr/lib/systemd/system/junction@.service"
doc=$usr/share/doc/junction
install -d "$doc/examples"
install -m 644 README.md docs/install.md "$doc/"
install -m 644 configs/*.toml "$doc/examples/"
if compgen -G "configs/plugins/*.toml" >/dev/null; then
	install -d "$doc/examples/plugins"
	install -m 644 configs/plugins/*.toml "$doc/examples/plugins/"
fi

# /etc/junction: the contract graphs, one service instance each.
install -d "$stage/etc/junction"
for c in ${JUNCTION_CONFIGS:-router-veth nat-gateway site-router bgp-router}; do
	if [ -f "configs/$c.toml" ]; then
		install -m 644 "configs/$c.toml" "$stage/etc/junction/"
	elif [ -n "${JUNCTION_CONFIGS:-}" ]; then
		echo "build-deb.sh: configs/$c.toml: no such graph" >&2
		exit 1
	fi
done

JUNCTION_STAGE=$stage go run "$NFPM" package \
	--config packaging/nfpm.yaml --packager deb --target "$out/" >&2
ls -t "$out"/junction_*"$GOARCH".deb | head -n 1
