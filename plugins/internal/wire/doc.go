// Package wire is the contract between the Junction plugin host and the
// plugin SDK: the go-plugin handshake, the gRPC control service (describe,
// validate, open) and the layout of the shared-memory batch ring with its
// spin-then-block doorbell.
package wire
