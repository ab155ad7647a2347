// Package benchcpu reports a benchmark's process CPU time per operation (cpu-ns/op) beside
// its wall time: on a machine whose cores other work shares, wall time per operation
// includes the time the benchmark waited for a core, and CPU time does not.
package benchcpu

import (
	"syscall"
	"testing"
	"time"
)

// Meter holds the process CPU time at the start of a measured loop.
type Meter struct{ start time.Duration }

// Start reads the process CPU time; call it right before the measured loop.
func Start(b *testing.B) Meter {
	b.Helper()
	return Meter{start: processCPU(b)}
}

// Report adds cpu-ns/op, the CPU time since Start divided by b.N, to b's results.
func (m Meter) Report(b *testing.B) {
	b.Helper()
	if b.N > 0 {
		b.ReportMetric(float64(processCPU(b)-m.start)/float64(b.N), "cpu-ns/op")
	}
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
