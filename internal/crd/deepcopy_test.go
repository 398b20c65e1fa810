package crd_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeepCopiesAreUpToDate regenerates api/v1beta1's deep copies (make
// generate) into a temporary directory and compares them with the
// committed file: a field added without regenerating would be shared, not
// copied, between the hub's state and what it hands out.
func TestDeepCopiesAreUpToDate(t *testing.T) {
	fresh := t.TempDir()
	controllerGen(t, "object:headerFile=hack/boilerplate.go.txt", "paths=./api/v1beta1", "output:object:dir="+fresh)
	const file = "zz_generated.deepcopy.go"
	want, err := os.ReadFile(filepath.Join(fresh, file))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(repoRoot, "api", "v1beta1", file))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("api/v1beta1/%s is stale; run make generate", file)
	}
}

// controllerGen runs the controller-gen make runs, in the repository. A
// test that needs it is skipped with -short, and without the module proxy
// outside CI: fetching and building controller-gen is the only step that
// needs it, and without it the comparison cannot run at all.
func controllerGen(t *testing.T, args ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs controller-gen")
	}
	gen := "sigs.k8s.io/controller-tools/cmd/controller-gen@" + controllerToolsVersion(t)
	goRun := func(args ...string) ([]byte, error) {
		cmd := exec.Command("go", append([]string{"run", gen}, args...)...)
		cmd.Dir = repoRoot
		return cmd.CombinedOutput()
	}
	if out, err := goRun(args...); err != nil {
		if vout, verr := goRun("--version"); verr != nil {
			msg := "cannot fetch or build " + gen + ": " + strings.TrimSpace(string(vout))
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
		t.Fatalf("controller-gen: %v\n%s", err, out)
	}
}
