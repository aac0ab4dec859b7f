package route

// Martian reports whether IPv4 address a (host order) lies in 0.0.0.0/8,
// 127.0.0.0/8 or 224.0.0.0/3 (multicast and reserved): never a unicast
// host, never forwarded.
func Martian(a uint32) bool {
	f := a >> 24
	return f == 0 || f == 127 || f >= 224
}
