// Package ndp provides IPv6 neighbour discovery (RFC 4861): NDPResponder
// answers solicitations for the router's addresses and announces them,
// NDPQuerier resolves next hops to MACs through a neighbour cache with
// RFC 4861's reachability states.
package ndp
