// Package golden compares test output with files under testdata/, the
// golden files, and rewrites them when the test runs with -update.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with what the tests produce")

// Assert compares got with testdata/<name>. With -update it writes got
// there first (creating folders), so the comparison passes and the change
// shows in the diff of the golden file.
func Assert(t testing.TB, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", filepath.FromSlash(name))
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (go test -update accepts the change):\n--- got\n%s\n--- want\n%s", p, got, want)
	}
}
