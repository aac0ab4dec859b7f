# Sourced by e2e-tcp.sh and e2e-tcp6.sh (TCFP=1).
#
# tcfp_config IN OUT: IN (a contract config) with its afxdp fast-path
# devices on the afpacket driver with fastpath = "auto": the fast path as
# a TC ingress program, no XDP program on any veth; every other line as
# in IN. The contract configs router-veth.toml and nat-gateway.toml ship
# that way now: IN is then copied as it is.
tcfp_config() {
	sed 's/^driver    = "afxdp"$/driver    = "afpacket"/; s/^fastpath  = true$/fastpath  = "auto"/' "$1" >"$2"
	if grep -q '^driver    = "afxdp"$' "$2" || ! grep -q '^fastpath  = "auto"$' "$2"; then
		echo "tcfp_config: $1 does not have its fast-path devices as \"driver    = \\\"afxdp\\\"\" then \"fastpath  = true\"" >&2
		return 1
	fi
}
