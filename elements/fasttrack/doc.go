// Package fasttrack provides FastTrack and FastTrackLearn: a per-flow fast path that applies the rewrite the slow path was seen to make (NAT, TTL, Ethernet header, output) in one step, engaging for one-way flows too.
package fasttrack
