package main

// The forwarder runs out-of-process element plugins (the Plugin element):
// elements/all leaves them out so that other binaries do not link the
// plugin host's RPC stack.
import "github.com/junction-dataplane/junction/plugins/host"

// withoutPlugins makes the graphs loaded until the returned function is
// called leave their Plugin elements' programs unstarted: commands that
// only read a graph (check without -plugins, graph, routes, an offline
// reload -dry-run) must not execute what the file names. run and bench
// start them (the handshake, the plugin's config validation, its
// outputs), as does check -plugins.
func withoutPlugins() (restore func()) {
	old := host.StartOnLoad(false)
	return func() { host.StartOnLoad(old) }
}
