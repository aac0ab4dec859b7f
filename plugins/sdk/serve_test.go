package sdk

import (
	"testing"
	"time"

	"github.com/junction-dataplane/junction/plugins/internal/wire"
)

type passAll struct{}

func (passAll) Process(*Batch) {}

// TestSessionServesBatchWrittenBeforeItStarts: on a loaded machine the
// host may write batch 1 (after Open returned) before the plugin's serve
// goroutine has run at all; the session must still serve it, not take it
// for a batch already seen (which made the host time out the batch).
func TestSessionServesBatchWrittenBeforeItStarts(t *testing.T) {
	_, r, err := wire.Create("junction-sdk-test")
	if err != nil {
		t.Fatal(err)
	}
	req, err := wire.NewBell()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := wire.NewBell()
	if err != nil {
		t.Fatal(err)
	}
	// The region and bells stay open until the test binary exits: the
	// session goroutine serves forever (a closed doorbell would make it
	// exit the process, an unmapped region would fault it).
	r.Reset()
	// The host's first batch: no packets, sequence 1, written before
	// the session goroutine starts.
	r.SetCount(0)
	r.Req().Store(1)
	s := &session{r: r, proc: passAll{}, outputs: 1, reqBell: req, respBell: resp}
	go s.loop()
	deadline := time.Now().Add(5 * time.Second)
	for r.Resp().Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("batch 1, written before the session started, was never served")
		}
		time.Sleep(time.Millisecond)
	}
}
