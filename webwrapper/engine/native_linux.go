package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"
)

// The window as the desktop shows it, beyond what DevTools can set: on X11 the browser's
// windows are found by their _NET_WM_PID, and asked of the window manager by the EWMH
// client messages a pager sends, which every EWMH window manager honours.

// nativeHide takes the browser's windows out of the taskbar (_NET_WM_STATE_SKIP_TASKBAR);
// Minimize has made them iconic, so that the window is hidden as the original's hide hid
// it.
func nativeHide(pid int) error { return x11State(pid, 1) }

// nativeShow puts them back in the taskbar.
func nativeShow(pid int) error { return x11State(pid, 0) }

// nativeFront asks the window manager to make the browser's window the active one
// (_NET_ACTIVE_WINDOW, as a pager asks: no focus-stealing prevention applies).
func nativeFront(pid int) error {
	return withX11(pid, func(x *xgb.Conn, root xproto.Window, w xproto.Window, atom func(string) (xproto.Atom, error)) error {
		active, err := atom("_NET_ACTIVE_WINDOW")
		if err != nil {
			return err
		}
		return clientMessage(x, root, w, active, 2, 0, 0, 0, 0)
	})
}

// x11State adds (1) or removes (0) _NET_WM_STATE_SKIP_TASKBAR.
func x11State(pid int, action uint32) error {
	return withX11(pid, func(x *xgb.Conn, root xproto.Window, w xproto.Window, atom func(string) (xproto.Atom, error)) error {
		state, err := atom("_NET_WM_STATE")
		if err != nil {
			return err
		}
		skip, err := atom("_NET_WM_STATE_SKIP_TASKBAR")
		if err != nil {
			return err
		}
		return clientMessage(x, root, w, state, action, uint32(skip), 0, 1, 0)
	})
}

// withX11 runs fn for each client window of process pid on the display of $DISPLAY. A
// session without X11 (Wayland alone) has nothing to do.
func withX11(pid int, fn func(x *xgb.Conn, root, w xproto.Window, atom func(string) (xproto.Atom, error)) error) error {
	if os.Getenv("DISPLAY") == "" {
		return nil
	}
	x, err := xgb.NewConn()
	if err != nil {
		return fmt.Errorf("connecting to the X display: %w", err)
	}
	defer x.Close()
	root := xproto.Setup(x).DefaultScreen(x).Root
	atom := func(name string) (xproto.Atom, error) {
		r, err := xproto.InternAtom(x, false, uint16(len(name)), name).Reply()
		if err != nil {
			return 0, fmt.Errorf("X11 atom %s: %w", name, err)
		}
		return r.Atom, nil
	}
	clients, err := atom("_NET_CLIENT_LIST")
	if err != nil {
		return err
	}
	wmPID, err := atom("_NET_WM_PID")
	if err != nil {
		return err
	}
	list, err := xproto.GetProperty(x, false, root, clients, xproto.AtomWindow, 0, 4096).Reply()
	if err != nil {
		return fmt.Errorf("reading the window manager's client list: %w", err)
	}
	var errs []error
	for i := 0; i+4 <= len(list.Value); i += 4 {
		w := xproto.Window(binary.LittleEndian.Uint32(list.Value[i:]))
		p, err := xproto.GetProperty(x, false, w, wmPID, xproto.AtomCardinal, 0, 1).Reply()
		if err != nil || len(p.Value) < 4 || int(binary.LittleEndian.Uint32(p.Value)) != pid {
			continue
		}
		errs = append(errs, fn(x, root, w, atom))
	}
	return errors.Join(errs...)
}

// clientMessage sends a 32-bit client message about w to the root window, where the
// window manager listens.
func clientMessage(x *xgb.Conn, root, w xproto.Window, typ xproto.Atom, data ...uint32) error {
	ev := xproto.ClientMessageEvent{Format: 32, Window: w, Type: typ, Data: xproto.ClientMessageDataUnionData32New(data)}
	return xproto.SendEventChecked(x, false, root,
		xproto.EventMaskSubstructureRedirect|xproto.EventMaskSubstructureNotify, string(ev.Bytes())).Check()
}
