package sampler

import (
	"time"

	"github.com/google/gopacket"
)

func captureInfo(t time.Time, capLen, length int) gopacket.CaptureInfo {
	return gopacket.CaptureInfo{Timestamp: t, CaptureLength: capLen, Length: length}
}
