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

// The descriptor the pipe is made with grants the current user alone, and no entry is
// inherited. (Whether Windows keeps another user out is its to enforce; Wine has one user
// and cannot show it.)
func TestNamedPipeSecurity(t *testing.T) {
	user, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		t.Fatal(err)
	}
	sd, err := windows.SecurityDescriptorFromString(userOnly(user.User.Sid))
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
	if ace.Header.AceType != windows.ACCESS_ALLOWED_ACE_TYPE || !sid.Equals(user.User.Sid) {
		t.Errorf("entry = type %d for %s, want allowed for the current user %s", ace.Header.AceType, sid, user.User.Sid)
	}
}
