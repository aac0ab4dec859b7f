package configs_test

// The example graphs include Plugin elements, which elements/all leaves to
// the binaries that run plugins.
import _ "github.com/junction-dataplane/junction/plugins/host"
