// Command wrongversion answers the go-plugin handshake with the right
// cookie but a protocol version this forwarder does not speak.
package main

import (
	"context"

	plugin "github.com/hashicorp/go-plugin"

	"github.com/junction-dataplane/junction/plugins/internal/wire"
)

func main() {
	hs := wire.Handshake
	hs.ProtocolVersion = wire.ProtocolVersion + 1
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: hs,
		Plugins:         plugin.PluginSet{wire.PluginName: &wire.GRPCPlugin{Impl: none{}}},
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}

type none struct{}

func (none) Describe(context.Context) (*wire.DescribeResponse, error) {
	return &wire.DescribeResponse{}, nil
}
func (none) Validate(context.Context, *wire.ValidateRequest) (*wire.ValidateResponse, error) {
	return &wire.ValidateResponse{}, nil
}
func (none) Open(context.Context, *wire.OpenRequest) (*wire.OpenResponse, error) {
	return &wire.OpenResponse{}, nil
}
