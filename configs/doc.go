// Package configs holds Junction's example graphs. Every *.toml file here is
// loaded and validated by the tests, and router.toml is run end to end over
// pcap files (the golden test). FS embeds them so that tools can list them.
package configs

import "embed"

// FS holds every example graph.
//
//go:embed *.toml
var FS embed.FS
