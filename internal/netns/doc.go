// Package netns builds throw-away Linux network namespaces and veth pairs
// for root-only tests, and removes them again even when a test fails.
//
// Typical use:
//
//	netns.RequireRoot(t)             // skips unless euid 0 and `ip` exists
//	env := netns.New(t)              // everything below is removed in t.Cleanup
//	fwd := env.NS("fwd")             // namespace "jn-fwd-<suffix>", lo up
//	cli := env.NS("cli")
//	env.Veth(fwd, "lan0", cli, "eth0", 2) // veth with 2 RX and 2 TX queues
//	fwd.Addr("lan0", "10.1.0.1/24")  // ip addr add; fwd.Up("lan0") sets it up
//	out := cli.MustRun("ping", "-c1", "10.1.0.1")
//	p := fwd.Start("iperf3", "-s")   // background process, killed in cleanup
//	fwd.Sysctl("net.ipv4.ip_forward", "1")
//	raw := cli.MustRaw("eth0")      // AF_PACKET socket: raw.Send(frame), raw.Recv(timeout)
//	err := fwd.Do(func() error { ... }) // Go code on a thread inside fwd
//
// Names: namespaces are "jn-<base>-<suffix>" where the suffix is unique to
// the test process and call, so parallel tests and concurrent test binaries
// never collide. Interfaces created directly inside a namespace may keep
// fixed names (lan0, wan0: each namespace has its own name space); an
// interface left in the root namespace (pass a nil *NS to Veth) must be
// unique on the host: build its name with Env.Unique (at most 15 bytes).
//
// Cleanup (registered by New, runs even after t.Fatal): processes started
// with NS.Start are killed (SIGKILL) and reaped, root-namespace links made
// by Veth are deleted, then the namespaces are deleted, which destroys the
// interfaces inside them together with any XDP program attached to them.
//
// Do runs a function on a goroutine locked to an OS thread that has joined
// the namespace (setns(2)); the thread returns to the original namespace
// afterwards (or is discarded if it cannot). Only that thread is inside the
// namespace: goroutines started by the function are not, and /sys still
// shows the original namespace's view (the mount namespace is unchanged);
// sockets created inside the function stay bound to the namespace for
// their whole life, from any thread. Run and Start use `ip netns exec`,
// which gives the child process the namespace and a matching /sys.
package netns
