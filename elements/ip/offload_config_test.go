package ip

import (
	"strings"
	"testing"
)

// TestOffloadLongerThanPorts: more offload devices than output ports is
// refused when the config is checked.
func TestOffloadLongerThanPorts(t *testing.T) {
	c := &IPLookupConfig{Routes: []string{"10.0.0.0/8 out 0"}, Miss: -1, Offload: []string{"lan", "wan"}}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "2 devices for 1 output ports") {
		t.Errorf("offload longer than the ports: %v", err)
	}
}
