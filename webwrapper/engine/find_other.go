//go:build !windows

package engine

// appPath has nothing to read outside Windows.
func appPath(string) string { return "" }
