// Package control is a running forwarder's control socket: a unix stream
// socket on which each connection carries one JSON request
// ({"cmd":"show","args":["flows","-n","10"]}) and gets one JSON response
// ({"data":...} or {"error":"...","usage":true}). Commands are registered
// by name (Server.Handle), so that a subsystem adds its command in one
// line; the forwarder's `show`, `clear`, `route`, `trace` and `capture`
// are such commands.
//
// Access: the socket is created with mode 0600 in a directory of mode
// 0755, and every connection's peer credentials (SO_PEERCRED) are checked:
// only root (uid 0) and the server's own uid may send commands; others get
// an error response and are logged nowhere else. The mode alone would do
// on most systems; the check also covers a socket path in a directory
// someone else made permissive, and file systems that ignore modes on
// sockets.
package control
