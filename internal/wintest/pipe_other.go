//go:build !windows

package wintest

// PrimePipe does nothing outside Windows: a Unix socket needs no priming.
func PrimePipe(string) {}
