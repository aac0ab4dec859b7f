# Sourced by e2e-tcp.sh and e2e-tcp6.sh: a contract config's devices
# moved between Junction's two in-kernel fast paths.
#
# xdp_config IN OUT (XDP=1): IN (a contract config, which ships its
# fast-path devices as `driver    = "afpacket"` then `fastpath  =
# "auto"`: the fast path as a TC ingress program, no XDP on any veth)
# with those devices on the afxdp driver with its XDP fast path
# (`driver    = "afxdp"`, `fastpath  = true`, what the contract configs
# shipped before); every other line as in IN. An IN whose fast-path
# devices are on afxdp already is copied as it is. The e2e tests'
# xdpConfig (cmd/forwarder/e2e) makes the same variant.
xdp_config() {
	sed -z 's/\ndriver    = "afpacket"\nfastpath  = "auto"\n/\ndriver    = "afxdp"\nfastpath  = true\n/g' "$1" >"$2"
	if grep -q '^fastpath  = "auto"$' "$2" || ! grep -q '^fastpath  = true$' "$2"; then
		echo "xdp_config: $1 does not have its fast-path devices as \"driver    = \\\"afpacket\\\"\" then \"fastpath  = \\\"auto\\\"\"" >&2
		return 1
	fi
}

# tcfp_config IN OUT: the reverse: IN's afxdp fast-path devices
# (`driver    = "afxdp"` then `fastpath  = true`) on the afpacket driver
# with fastpath = "auto"; every other line as in IN. No script calls it
# since the contract configs ship that way (they are copied as they are);
# kept for copies of configs with afxdp devices.
tcfp_config() {
	sed 's/^driver    = "afxdp"$/driver    = "afpacket"/; s/^fastpath  = true$/fastpath  = "auto"/' "$1" >"$2"
	if grep -q '^driver    = "afxdp"$' "$2" || ! grep -q '^fastpath  = "auto"$' "$2"; then
		echo "tcfp_config: $1 does not have its fast-path devices as \"driver    = \\\"afxdp\\\"\" then \"fastpath  = true\"" >&2
		return 1
	fi
}
