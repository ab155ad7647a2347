//go:build !windows

package instance

// allowForegroundWindow has nothing to allow outside Windows: the window managers take the
// wrapper's request to activate its window (_NET_ACTIVE_WINDOW) from any program.
func allowForegroundWindow(int) bool { return true }
