package elements

import "testing"

// TestFollowSessionPerTracer: the session that follows held packets'
// records between sessions belongs to its tracer (one per router): two
// routers do not share it, and it captures and marks nothing.
func TestFollowSessionPerTracer(t *testing.T) {
	var a, b Tracer
	fa, fb := a.followSession(), b.followSession()
	if fa == fb {
		t.Fatal("two tracers share one follow session")
	}
	if a.followSession() != fa {
		t.Error("a tracer's follow session changed")
	}
	if fa.Trace || fa.CaptureElement != -1 || fa.CapturePort != -1 || fa.Out != nil {
		t.Errorf("follow session marks or captures: %+v", fa)
	}
}
