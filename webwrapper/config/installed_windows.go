package config

import (
	"errors"
	"fmt"

	"golang.org/x/sys/windows/registry"
)

// readInstalled reads the Installed values under HKCU\Software\<vendor>\<product>; a
// missing key or value is not set.
func readInstalled(vendor, product string) (map[string]string, error) {
	k, err := registry.OpenKey(registry.CURRENT_USER, `Software\`+vendor+`\`+product, registry.QUERY_VALUE)
	if errors.Is(err, registry.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer k.Close()
	values := map[string]string{}
	for _, name := range Installed {
		v, _, err := k.GetStringValue(name)
		if errors.Is(err, registry.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("value %s: %w", name, err)
		}
		values[name] = v
	}
	return values, nil
}
