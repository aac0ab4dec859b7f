package host

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/junction-dataplane/junction/elements"
	"github.com/junction-dataplane/junction/plugins/internal/wire"
)

// Config is the Plugin element's config.
type Config struct {
	Path      string         `toml:"path"`
	Element   string         `toml:"element"`
	Config    map[string]any `toml:"config"`
	OnFailure string         `toml:"on_failure"`
	Timeout   time.Duration  `toml:"timeout"`
	SHA256    string         `toml:"sha256"`

	// Filled by Validate: what the plugin said about the element.
	abs     string
	info    wire.ElementInfo
	outputs int
	// notStarted: Validate checked the keys and the executable's path
	// without starting it (StartOnLoad off); its outputs are unknown.
	notStarted bool
}

// startOnLoad: whether loading a graph starts its plugins to validate
// them (StartOnLoad).
var startOnLoad atomic.Bool

func init() { startOnLoad.Store(true) }

// StartOnLoad sets whether validating a Plugin config (loading a graph)
// starts the plugin, and returns the previous setting. On, the default,
// is what run needs: the handshake, the plugin's own config validation,
// the element's outputs. Off is for commands that only read a graph
// (forwarder check without -plugins, graph, routes): the file they are
// given must not make them execute a program; a Plugin's keys and path
// (with its ownership and mode) are checked, its config and outputs are
// not, and its outputs are taken from the graph's links.
func StartOnLoad(on bool) bool { return startOnLoad.Swap(on) }

// Defaults.
const (
	DefaultTimeout = 50 * time.Millisecond
	MaxTimeout     = 10 * time.Second
)

// NewConfig returns the defaults.
func NewConfig() any {
	return &Config{OnFailure: "drop", Timeout: DefaultTimeout}
}

// Validate checks the keys, then starts the plugin, completes the
// handshake, and has the plugin validate its own config, so that a graph
// with a bad plugin config is refused at load like any other, with the
// plugin's error attached to this element's config key.
func (c *Config) Validate() error {
	if c.Element == "" {
		return elements.Errorf("element", "required: the element's name inside the plugin")
	}
	switch c.OnFailure {
	case "bypass", "drop":
	default:
		return elements.Errorf("on_failure", "%q: want \"bypass\" or \"drop\"", c.OnFailure)
	}
	if c.Timeout <= 0 || c.Timeout > MaxTimeout {
		return elements.Errorf("timeout", "%v: want more than 0 and at most %v", c.Timeout, MaxTimeout)
	}
	if c.SHA256 != "" {
		c.SHA256 = strings.ToLower(c.SHA256)
		if b, err := hex.DecodeString(c.SHA256); err != nil || len(b) != 32 {
			return elements.Errorf("sha256", "%q: want 64 hexadecimal digits", c.SHA256)
		}
	}
	abs, err := resolvePath(c.Path)
	if err != nil {
		return elements.Errorf("path", "%v", err)
	}
	c.abs = abs
	text, err := c.configText()
	if err != nil {
		return elements.Errorf("config", "%v", err)
	}
	c.notStarted = !startOnLoad.Load()
	if c.notStarted {
		return nil
	}
	p, err := launch(context.Background(), abs, c.SHA256, "plugin "+c.Element+" (validating)", nil)
	if err != nil {
		return err
	}
	defer p.kill()
	ctx, cancel := callContext(context.Background())
	d, err := p.rpc.Describe(ctx)
	cancel()
	if err != nil {
		return elements.Errorf("path", "%s: describe: %v", c.Path, callError(err))
	}
	var info *wire.ElementInfo
	var names []string
	for i := range d.Elements {
		names = append(names, d.Elements[i].Name)
		if d.Elements[i].Name == c.Element {
			info = &d.Elements[i]
		}
	}
	if info == nil {
		sort.Strings(names)
		return elements.Errorf("element", "%q: not served by %s (it serves %s)", c.Element, c.Path, strings.Join(names, ", "))
	}
	if len(info.Reasons) > wire.MaxReasons {
		return elements.Errorf("element", "%s declares %d drop reasons, at most %d", c.Element, len(info.Reasons), wire.MaxReasons)
	}
	ctx, cancel = callContext(context.Background())
	v, err := p.rpc.Validate(ctx, &wire.ValidateRequest{Element: c.Element, Config: text})
	cancel()
	if err != nil {
		return elements.Errorf("config", "plugin failed to validate it: %v", callError(err))
	}
	if err := keyErrors(v.Errors); err != nil {
		return err
	}
	if v.Outputs < 1 || v.Outputs > wire.Drop-1 {
		return elements.Errorf("element", "%s: plugin reports %d outputs", c.Element, v.Outputs)
	}
	c.info, c.outputs = *info, v.Outputs
	return nil
}

// keyErrors turns the plugin's config errors into one located error: on
// key "config.KEY" when there is one (the loader places it at that inner
// key's line), else on "config" naming every inner key.
func keyErrors(errs []wire.KeyErr) error {
	if len(errs) == 0 {
		return nil
	}
	if len(errs) == 1 && errs[0].Key != "" && errs[0].Key != "element" {
		// One error: name the inner key, so the loader can point at its
		// own line (config.min rather than config).
		return elements.Errorf("config."+errs[0].Key, "%s", errs[0].Msg)
	}
	var parts []string
	for _, e := range errs {
		switch e.Key {
		case "":
			parts = append(parts, e.Msg)
		case "element":
			return elements.Errorf("element", "%s", e.Msg)
		default:
			parts = append(parts, fmt.Sprintf("%q: %s", e.Key, e.Msg))
		}
	}
	return elements.Errorf("config", "%s", strings.Join(parts, "; "))
}

// configText is the config table as TOML, as the plugin decodes it.
func (c *Config) configText() (string, error) {
	if len(c.Config) == 0 {
		return "", nil
	}
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(c.Config); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Ports: one input, the plugin's outputs (1 before Validate has run).
func (c *Config) Ports() (in, out int) {
	if c.outputs < 1 {
		return 1, 1
	}
	return 1, c.outputs
}

// OutputsFromLinks: a plugin not started at load has as many outputs as
// the graph's links use.
func (c *Config) OutputsFromLinks() bool { return c.notStarted }

// NotStarted reports whether Validate left the plugin unstarted.
func (c *Config) NotStarted() bool { return c.notStarted }

var (
	_ elements.Validator     = (*Config)(nil)
	_ elements.PortCounter   = (*Config)(nil)
	_ elements.LinkedOutputs = (*Config)(nil)
)

func init() {
	elements.Register(elements.Type{
		Name:       "Plugin",
		FlowState:  true, // a plugin's state is its own business: assume per flow
		NewConfig:  NewConfig,
		New:        newInstance,
		In:         1,
		Out:        -1,
		Doc:        pluginManual,
		TakesState: true, // an unchanged Plugin keeps its process across a reload
	})
}
