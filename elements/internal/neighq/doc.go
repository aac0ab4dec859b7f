// Package neighq is what ARPQuerier and NDPQuerier share: the Ethernet
// header they write in front of L3, the per-worker queues of packets that
// wait for a neighbour to resolve, the per-worker rate limit on the
// requests (solicitations) they send, and the side batch those requests
// and released packets leave by, and the check of their device key.
//
// Everything here is concrete (no interfaces, no generics): the types sit
// inside each querier and the small methods inline into its per-packet
// path. What the two protocols do differently (the neighbour table, when
// to ask, what a request looks like) stays in the elements.
package neighq
