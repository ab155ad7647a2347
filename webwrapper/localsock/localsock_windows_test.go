package localsock

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/partnergate/partnergate/internal/wintest"
)

func testPath(t *testing.T, name string) string {
	return fmt.Sprintf(`\\.\pipe\localsock-test.%d.%s.%s`, os.Getpid(), strings.ReplaceAll(t.Name(), "/", "."), name)
}

func primeTestPipe(path string) { wintest.PrimePipe(path) }

// The descriptor the pipe is made with grants the current logon session alone (its logon
// SID, S-1-5-5-X-Y: this user in this session), and no entry is inherited. (Whether
// Windows keeps another user or session out is its to enforce; Wine has one user and one
// session and cannot show it.)
func TestNamedPipeSecurity(t *testing.T) {
	logon, err := logonSID()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(logon.String(), "S-1-5-5-") {
		t.Fatalf("logon SID = %s, want S-1-5-5-X-Y", logon)
	}
	sd, err := windows.SecurityDescriptorFromString(sessionOnly(logon))
	if err != nil {
		t.Fatalf("the descriptor does not parse: %v", err)
	}
	ctl, _, err := sd.Control()
	if err != nil || ctl&windows.SE_DACL_PROTECTED == 0 {
		t.Errorf("control = %#x, %v; want a protected DACL", ctl, err)
	}
	dacl, _, err := sd.DACL()
	if err != nil || dacl == nil || dacl.AceCount != 1 {
		t.Fatalf("DACL = %+v, %v; want one entry", dacl, err)
	}
	var ace *windows.ACCESS_ALLOWED_ACE
	if err := windows.GetAce(dacl, 0, &ace); err != nil {
		t.Fatal(err)
	}
	sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
	if ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE || !sid.Equals(logon) {
		t.Errorf("entry = type %d for %s, want allowed for the logon session %s", ace.Header.AceType, sid, logon)
	}
}

// The session is this process's Windows session, by its number.
func TestSession(t *testing.T) {
	var id uint32
	if err := windows.ProcessIdToSessionId(windows.GetCurrentProcessId(), &id); err != nil {
		t.Fatal(err)
	}
	if got, want := Session(), fmt.Sprintf("session-%d", id); got != want {
		t.Errorf("Session() = %q, want %q", got, want)
	}
}
