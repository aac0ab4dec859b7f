package host

import (
	"strconv"

	"github.com/junction-dataplane/junction/elements"
)

// The manual pages of this package's elements, beside the code as the
// drivers keep theirs (forwarder elements TYPE prints them).

// pluginManual is Plugin's manual page (forwarder elements Plugin).
var pluginManual = elements.Doc{
	Synopsis: "Plugin(PATH, ELEMENT, [config], [on_failure], [timeout], [sha256])",
	Summary:  "runs an element from a plugin executable in its own process, batches through shared memory",
	Text: "The plugin is an executable built with plugins/sdk (hashicorp/go-plugin over gRPC). " +
		"At load the forwarder starts it, checks the handshake (magic cookie, protocol version, " +
		"and the executable's SHA-256 if sha256 is set), asks it to validate config, and learns " +
		"the element's outputs and drop reasons; forwarder check does so only with -plugins (checking a file " +
		"does not execute what it names: without, the keys and the executable's path, owner and mode are checked " +
		"and the element has the outputs its links use), and graph and routes never do. Before every start, restarts included, the executable " +
		"is checked as OpenSSH checks what it executes: the file and every directory above it must be " +
		"owned by root or the forwarder's user and not group- or world-writable (a world-writable " +
		"directory only with the sticky bit), and its SHA-256 must match sha256 if set. A start " +
		"(exec to handshake) and each control call must finish within 10 s; on expiry, or when the " +
		"router stops, the plugin's process group is killed and its pipes closed, so nothing it forks " +
		"can delay loading, restarts or the exit. At start each worker gets " +
		"its own plugin process and a shared-memory region; each batch is copied into the region, " +
		"announced with one doorbell, processed in place by the plugin, and checked on return. " +
		"If the plugin crashes, does not answer within timeout, or returns an output port out of " +
		"range or a length beyond the buffer, the batch gets on_failure, the event is counted and " +
		"logged, and the plugin is restarted with backoff (10 ms doubling to 2 s); a failed " +
		"restart is counted in start failures and retried, logged once per outage; while it is " +
		"down, batches get on_failure at once. Relative paths are taken from the current " +
		"directory; a bare name is looked up in $PATH.",
	Ports: "input 0: any packets; outputs 0..N-1 as the plugin element declares (N from the plugin). " +
		"With on_failure = \"bypass\" a failed batch leaves unchanged on output 0.",
	Keys: []elements.Key{
		{Name: "path", Type: "string", Required: true, Doc: "the plugin executable"},
		{Name: "element", Type: "string", Required: true, Doc: "the element's name inside the plugin"},
		{Name: "config", Type: "table", Default: "{}", Doc: "the element's own config, validated by the plugin at load"},
		{Name: "on_failure", Type: "string", Default: `"drop"`, Doc: `"bypass" (send the batch on unchanged) or "drop"`},
		{Name: "timeout", Type: "duration", Default: strconv.Quote(DefaultTimeout.String()), Doc: "longest wait for one batch before the plugin is declared hung"},
		{Name: "sha256", Type: "string", Default: "-", Doc: "pins the executable: it must have this SHA-256, checked before every start"},
	},
	Stats: `drop reasons: "plugin drop" (the plugin dropped it), the plugin's own reasons, ` +
		`"plugin failure" (on_failure = "drop"); counters "bypassed" (packets sent on by a failure), ` +
		`"crashes", "timeouts", "garbage" (bad ports or lengths returned), "restarts", ` +
		`"start failures" (restarts refused or failed: checks, handshake, open).`,
	Example: "[elements.filter]\ntype = \"Plugin\"\npath = \"./bin/patternfilter\"\nelement = \"PatternFilter\"\n" +
		"on_failure = \"bypass\"\nconfig = { patterns = [\"attack\"] }",
	SeeAlso: "plugins/sdk, plugins/README.md",
}
