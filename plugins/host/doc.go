// Package host runs out-of-process element plugins: it registers the
// element type "Plugin", starts plugin executables over hashicorp/go-plugin
// (gRPC, magic cookie, protocol version, optional SHA-256 pinning), moves
// batches through shared memory with one doorbell per batch, checks all
// that comes back, and survives plugins that crash, hang or lie by applying
// the element's on_failure policy and restarting them with backoff.
//
// One plugin process serves one element instance (one worker's copy of one
// graph element), so a plugin needs no locking and a crash costs one
// worker's element only.
package host
