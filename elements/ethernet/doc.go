// Package ethernet provides EtherRewrite, which writes static Ethernet addresses.
package ethernet
