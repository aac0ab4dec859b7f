// Package sdk is what a Junction element plugin imports: implement a batch
// Processor and a config struct, describe them in an Element, and call Serve
// from main.
//
// The contract is the in-process one (elements.Element) seen through shared
// memory: Process gets a whole batch whose frames live in a region mapped
// by both the forwarder and the plugin, so reading a frame costs no copy and
// no system call. For each packet the processor sets an output port
// (Send) or drops it (Drop, DropReason), may modify its bytes in place, and
// may change its length within its buffer (SetLen). The forwarder checks
// everything that comes back: a port out of range or a length beyond the
// buffer fails the batch under the element's on_failure policy, and the
// plugin is restarted.
//
// A minimal plugin:
//
//	func main() {
//		sdk.Serve(sdk.Element{
//			Name:      "DropShort",
//			Outputs:   1,
//			NewConfig: func() any { return &Config{Min: 60} },
//			New:       func(cfg any) (sdk.Processor, error) { return &dropShort{cfg.(*Config).Min}, nil },
//			Doc:       sdk.Doc{Summary: "drops frames shorter than min"},
//		})
//	}
//
// Panicking in Process, hanging, or exiting is survived by the forwarder
// (the batch gets on_failure, the plugin is restarted with backoff), but it
// costs a restart: treat them as bugs, as in-process elements do.
package sdk
