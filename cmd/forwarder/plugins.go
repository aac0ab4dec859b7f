package main

// The forwarder runs out-of-process element plugins (the Plugin element):
// elements/all leaves them out so that other binaries do not link the
// plugin host's RPC stack.
import _ "github.com/junction-dataplane/junction/plugins/host"
