package harness

import (
	"os"
	"path/filepath"
	"testing"
)

// SaveArtifact writes data to integration/artifacts/<folder>/<file> (ignored by git), where
// the suites keep what a person would look at: screenshots, rendered pages. A failure to
// write is logged, not fatal: the artefact is evidence, not the test's verdict.
func SaveArtifact(t *testing.T, folder, file string, data []byte) {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Logf("artifact %s: %v", file, err)
		return
	}
	dir := filepath.Join(root, "integration", "artifacts", folder)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("artifact %s: %v", file, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
		t.Logf("artifact %s: %v", file, err)
	}
}
