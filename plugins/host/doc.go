// Package host runs out-of-process element plugins: it registers the
// element type "Plugin", starts plugin executables over hashicorp/go-plugin
// (gRPC, magic cookie, protocol version, optional SHA-256 pinning) after
// checking who could have replaced the executable, moves
// batches through shared memory with one doorbell per batch, checks all
// that comes back, and survives plugins that crash, hang or lie by applying
// the element's on_failure policy and restarting them with backoff.
//
// No plugin can hold up the host: each runs as the leader of its own
// process group on pipes the host owns (runner.go), and a start, a control
// call and a stop each have a deadline (StartTimeout, CallTimeout,
// StopTimeout) after which the group is killed and the pipes closed.
//
// One plugin process serves one element instance (one worker's copy of one
// graph element), so a plugin needs no locking and a crash costs one
// worker's element only.
package host
