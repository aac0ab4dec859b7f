// Package ip provides the IPv4 router elements: CheckIPHeader, DecTTL, ICMPError and IPLookup.
package ip
