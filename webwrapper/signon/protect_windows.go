package signon

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"
)

// protection names how this system keeps a device sign-on's secret at rest.
const protection = "dpapi"

// entropy is DPAPI's second secret: a blob of another program of the user, protected
// without it, does not open as a device sign-on.
var entropy = []byte("Svc Webwrapper device sign-on v1")

// seal protects secret with DPAPI in the user's scope (CryptProtectData without
// CRYPTPROTECT_LOCAL_MACHINE): only a program running as the same Windows user on this
// computer opens it, and a copy of signon.json taken elsewhere is useless.
func seal(secret string) (string, error) {
	if secret == "" {
		return "", errors.New("sealing the device sign-on: no secret")
	}
	in := []byte(secret)
	var out windows.DataBlob
	err := windows.CryptProtectData(blob(in), nil, blob(entropy), 0, nil, windows.CRYPTPROTECT_UI_FORBIDDEN, &out)
	if err != nil {
		return "", fmt.Errorf("sealing the device sign-on: %w", err)
	}
	defer windows.LocalFree(windows.Handle(unsafe.Pointer(out.Data)))
	return protection + ":" + base64.StdEncoding.EncodeToString(unsafe.Slice(out.Data, out.Size)), nil
}

// unseal opens what seal made.
func unseal(sealed string) (string, error) {
	enc, ok := strings.CutPrefix(sealed, protection+":")
	if !ok {
		return "", errors.New("opening the device sign-on: not sealed with DPAPI")
	}
	in, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(in) == 0 {
		return "", errors.New("opening the device sign-on: not sealed with DPAPI")
	}
	var out windows.DataBlob
	err = windows.CryptUnprotectData(blob(in), nil, blob(entropy), 0, nil, windows.CRYPTPROTECT_UI_FORBIDDEN, &out)
	if err != nil {
		return "", fmt.Errorf("opening the device sign-on: %w", err)
	}
	defer windows.LocalFree(windows.Handle(unsafe.Pointer(out.Data)))
	return string(unsafe.Slice(out.Data, out.Size)), nil
}

func blob(b []byte) *windows.DataBlob {
	return &windows.DataBlob{Size: uint32(len(b)), Data: unsafe.SliceData(b)}
}
