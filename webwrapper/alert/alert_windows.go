package alert

import (
	"context"
	"fmt"

	"golang.org/x/sys/windows"
)

// boxStyle is the message box's: an OK button and the error icon, brought to the front and
// kept above other windows, since no window of the wrapper's is there to own it.
const boxStyle = windows.MB_OK | windows.MB_ICONERROR | windows.MB_SETFOREGROUND | windows.MB_TOPMOST

// show shows a message box and waits until the person closes it.
func show(_ context.Context, m Message) error {
	title, err := windows.UTF16PtrFromString(m.Title)
	if err != nil {
		return err
	}
	text, err := windows.UTF16PtrFromString(m.Text)
	if err != nil {
		return err
	}
	if _, err := windows.MessageBox(0, text, title, boxStyle); err != nil {
		return fmt.Errorf("showing a message box: %w", err)
	}
	return nil
}
