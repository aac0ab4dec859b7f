package wire

import (
	"context"
	"encoding/json"
	"errors"

	plugin "github.com/hashicorp/go-plugin"
	"github.com/junction-dataplane/junction/conf"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// ProtocolVersion is the version of this contract (handshake, control
// service and region layout). A plugin built against another version is
// refused at the handshake.
const ProtocolVersion = 1

// Handshake is the go-plugin handshake both sides use. The cookie is not a
// secret: it stops a user from running a plugin by hand, and stops the host
// from talking to an executable that is not a Junction plugin.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "JUNCTION_PLUGIN",
	MagicCookieValue: "b7d1c0e2-junction-element-plugin",
}

// PluginName is the name under which the element service is dispensed.
const PluginName = "elements"

// ElementInfo describes one element a plugin serves.
type ElementInfo struct {
	Name     string
	Doc      conf.Doc
	Outputs  int
	Reasons  []string // drop reasons, index = port & ReasonMask
	ReadOnly bool     // never changes frame bytes or lengths
}

// DescribeResponse lists a plugin's elements.
type DescribeResponse struct {
	Elements []ElementInfo
	SDK      string // SDK version string, for messages
}

// ValidateRequest asks a plugin to check an element's config.
type ValidateRequest struct {
	Element string
	Config  string // TOML text of the element's config table
}

// KeyErr is one config error, attributed to a key of the config table.
type KeyErr struct {
	Key string
	Msg string
}

// ValidateResponse holds the config errors (none: valid).
type ValidateResponse struct {
	Errors  []KeyErr
	Outputs int // output ports for this config
}

// OpenRequest starts serving an element over the region at FDRegion.
type OpenRequest struct {
	Element string
	Config  string
	Batch   int
}

// OpenResponse reports the opened element's info (or Errors).
type OpenResponse struct {
	Info   ElementInfo
	Errors []KeyErr
}

// Server is what the SDK implements.
type Server interface {
	Describe(ctx context.Context) (*DescribeResponse, error)
	Validate(ctx context.Context, req *ValidateRequest) (*ValidateResponse, error)
	Open(ctx context.Context, req *OpenRequest) (*OpenResponse, error)
}

// The control service is declared by hand (no protoc): each method takes
// and returns a google.protobuf.BytesValue holding JSON. It is called a
// handful of times per plugin start, never per batch, so its encoding
// costs nothing that matters.
const serviceName = "junction.plugin.v1.Elements"

func handler[Req any, Resp any](call func(s Server, ctx context.Context, req *Req) (*Resp, error)) func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
	return func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.BytesValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		req := new(Req)
		if len(in.Value) > 0 {
			if err := json.Unmarshal(in.Value, req); err != nil {
				return nil, err
			}
		}
		resp, err := call(srv.(Server), ctx, req)
		if err != nil {
			return nil, err
		}
		out, err := json.Marshal(resp)
		if err != nil {
			return nil, err
		}
		return wrapperspb.Bytes(out), nil
	}
}

type empty struct{}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: serviceName,
	HandlerType: (*Server)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Describe", Handler: handler(func(s Server, ctx context.Context, _ *empty) (*DescribeResponse, error) {
			return s.Describe(ctx)
		})},
		{MethodName: "Validate", Handler: handler(func(s Server, ctx context.Context, r *ValidateRequest) (*ValidateResponse, error) {
			return s.Validate(ctx, r)
		})},
		{MethodName: "Open", Handler: handler(func(s Server, ctx context.Context, r *OpenRequest) (*OpenResponse, error) {
			return s.Open(ctx, r)
		})},
	},
	Metadata: "junction/plugin/v1 (hand-declared)",
}

// GRPCPlugin is the go-plugin Plugin of both sides: the SDK sets Impl, the
// host uses the client half.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Server
}

// GRPCServer registers the element service.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errors.New("wire: no server implementation")
	}
	s.RegisterService(&serviceDesc, p.Impl)
	return nil
}

// GRPCClient returns a *Client.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &Client{cc: cc}, nil
}

// Client is the host's stub of the control service.
type Client struct {
	cc *grpc.ClientConn
}

func invoke[Resp any](ctx context.Context, c *Client, method string, req any) (*Resp, error) {
	var in []byte
	if req != nil {
		b, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		in = b
	}
	out := new(wrapperspb.BytesValue)
	if err := c.cc.Invoke(ctx, "/"+serviceName+"/"+method, wrapperspb.Bytes(in), out); err != nil {
		return nil, err
	}
	resp := new(Resp)
	if err := json.Unmarshal(out.Value, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// Describe lists the plugin's elements.
func (c *Client) Describe(ctx context.Context) (*DescribeResponse, error) {
	return invoke[DescribeResponse](ctx, c, "Describe", nil)
}

// Validate checks a config.
func (c *Client) Validate(ctx context.Context, r *ValidateRequest) (*ValidateResponse, error) {
	return invoke[ValidateResponse](ctx, c, "Validate", r)
}

// Open starts the element on the shared region.
func (c *Client) Open(ctx context.Context, r *OpenRequest) (*OpenResponse, error) {
	return invoke[OpenResponse](ctx, c, "Open", r)
}
