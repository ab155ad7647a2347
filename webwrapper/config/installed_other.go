//go:build !windows

package config

// readInstalled reads nothing: outside Windows there is no installer that sets values.
func readInstalled(vendor, product string) (map[string]string, error) { return nil, nil }
