// Package route is IPLookup's route table: a longest-prefix-match table for
// IPv4 (DIR-24-8) and IPv6 (a multibit trie), shared by every worker and
// read without locks (the versions and their lookups: fib.go), updated by
// copy-on-write (table.go; the writer's halves: fib4.go, fib6.go, next-hop
// sets fib_nexthop.go, sizes fibmem.go) with a journal of the prefixes
// each version changed; its pages on huge-page slabs (slab.go); the route
// syntax and routes files (routes.go), and the validated sets of large
// routes files a router remembers across loads of its graph (remember.go:
// its reload does not parse an unchanged file again); synthetic tables for
// benchmarks (routegen.go).
// IPv6 lookups of a whole batch interleave their trie walks (fib6batch.go).
//
// A route is unicast (its paths) or of another Type: blackhole,
// unreachable, prohibit, kept as a next-hop set whose one path has the
// port -Type, so that the data path's check that a port exists is also
// the check for them and unicast lookups pay nothing.
//
// The IPLookup element (elements/ip) builds a Table from a table's config
// (elements/ip/tables), shares it among the lookups that read it, and
// looks a batch up in one published version (Table.Current). Its mirrors
// are packages of their own, so that the table imports neither netlink
// nor a driver: route/kernelmirror copies a kernel routing table into a
// Table (Apply, Replace), route/fpmirror a Table into a driver's in-kernel
// fast path (Routes, then the journal: StartJournal, ChangesSince).
package route
