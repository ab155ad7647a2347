package harness

import (
	"errors"
	"os"
	"os/exec"
	"testing"
)

// TestMain builds no caddy: this package's tests need only the racy program.
func TestMain(m *testing.M) { os.Exit(run(m)) }

// TestRaceReported runs a program built as Binary builds caddy, once with a data race and
// once without, and checks that RaceReported tells them apart from the real detector's
// output and exit status: the check StartCaddy and RunCaddy make at cleanup.
func TestRaceReported(t *testing.T) {
	bin := Binary(t, "./internal/harness/testdata/racy")
	for _, tt := range []struct {
		arg      string
		wantRace bool
	}{
		{"race", true},
		{"locked", false},
	} {
		t.Run(tt.arg, func(t *testing.T) {
			out, err := exec.Command(bin, tt.arg).CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("running racy %s: %v", tt.arg, err)
			}
			if got := RaceReported(string(out), code); (got != nil) != tt.wantRace {
				t.Errorf("RaceReported(output of racy %s, %d) = %v, want a race reported: %v\n%s", tt.arg, code, got, tt.wantRace, out)
			}
		})
	}
	// either sign alone is enough: a report cut short, or GORACE log_path sending the
	// report elsewhere, still fails the test
	if RaceReported("WARNING: DATA RACE\n", 0) == nil {
		t.Error(`RaceReported("WARNING: DATA RACE", 0) = nil, want an error`)
	}
	if RaceReported("", raceExitCode) == nil {
		t.Errorf(`RaceReported("", %d) = nil, want an error`, raceExitCode)
	}
}
