//go:build !linux && !windows

package engine

// Outside Linux and Windows the window is what DevTools makes it: minimised by hide, and
// restored and brought to the front by show.
func nativeHide(int) error  { return nil }
func nativeShow(int) error  { return nil }
func nativeFront(int) error { return nil }
