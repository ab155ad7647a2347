package config

import (
	"testing"

	"golang.org/x/sys/windows/registry"
)

// LoadInstalled reads the values the MSI writes under HKCU\Software\<vendor>\<product>:
// a key of the test's own, with the value path the installer writes beside them.
func TestLoadInstalled(t *testing.T) {
	const vendor, product = "SvcTest", "Installed"
	key := `Software\` + vendor + `\` + product
	c, _ := load(t, appConfig, "")
	if err := c.LoadInstalled(vendor, product); err != nil {
		t.Fatalf("LoadInstalled without the key: %v", err)
	}
	if got := c.String(AppUrl); got != "https://svc.example/app/signin" {
		t.Errorf("String(AppUrl) without the key = %q, want the .exe.config's", got)
	}

	k, _, err := registry.CreateKey(registry.CURRENT_USER, key, registry.SET_VALUE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = registry.DeleteKey(registry.CURRENT_USER, key)
		_ = registry.DeleteKey(registry.CURRENT_USER, `Software\`+vendor)
	})
	for name, v := range map[string]string{
		"AppUrl":     "https://ehr.clinic.example/app/signin",
		"AdfsUrl":    "https://gateway.clinic.example/app/directory/clinic/signin",
		"Culture":    "",
		"UpdateSite": "https://gateway.clinic.example/webwrapper/",
		"path":       `C:\users\asa\AppData\Roaming\Svc\Svc Webwrapper\2.1.5.8\`,
	} {
		if err := k.SetStringValue(name, v); err != nil {
			t.Fatal(err)
		}
	}
	k.Close()

	c, _ = load(t, appConfig, "")
	if err := c.LoadInstalled(vendor, product); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, want string }{
		{AppUrl, "https://ehr.clinic.example/app/signin"},
		{AdfsUrl, "https://gateway.clinic.example/app/directory/clinic/signin"},
		{Culture, "nb-NO"}, // blank in the registry: the .exe.config's
		{UpdateSite, "https://gateway.clinic.example/webwrapper/"},
	} {
		if got := c.String(tt.name); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
