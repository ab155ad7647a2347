package main

import (
	"os"
	"testing"
)

// programEnv, set in a child's environment, makes the test binary the program itself, so
// that a test can start the real program (its main, with the real message box or
// notification) as a person's desktop does.
const programEnv = "WEBWRAPPER_TEST_PROGRAM"

func TestMain(m *testing.M) {
	if os.Getenv(programEnv) == "1" {
		os.Args = append(os.Args[:1], os.Args[1+indexArgs(os.Args[1:]):]...)
		main()
		return
	}
	os.Exit(m.Run())
}

// indexArgs is where the program's own arguments start: after the test flags (-test.*)
// that go test passes the binary.
func indexArgs(args []string) int {
	for i, a := range args {
		if len(a) < 6 || a[:6] != "-test." {
			return i
		}
	}
	return len(args)
}
