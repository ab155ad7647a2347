package config

import (
	"fmt"
	"strings"
)

// Installed are the settings an installer sets for its installation: the MSI's public
// properties APPURL, ADFSURL, CULTURE and UPDATESITE (deploy/windows/webwrapper.wxs),
// which it writes as values of these names under HKCU\Software\<vendor>\<product>, where
// an upgrade keeps them (the per-version install folder, and its .exe.config, does not).
var Installed = []string{AppUrl, AdfsUrl, Culture, UpdateSite}

// LoadInstalled lays the installer's settings over the application config: a setting is
// then the user value, else the installer's, else the .exe.config's, else the default. A
// blank value is not set. Outside Windows no installer writes any, and it reads nothing.
func (c *Config) LoadInstalled(vendor, product string) error {
	values, err := readInstalled(vendor, product)
	if err != nil {
		return fmt.Errorf("reading the installer's settings: %w", err)
	}
	c.install(values)
	return nil
}

// install lays values (by setting name) over the application config; only the names of
// Installed count.
func (c *Config) install(values map[string]string) {
	for _, name := range Installed {
		if v := strings.TrimSpace(values[name]); v != "" {
			c.app[name] = v
		}
	}
}
