package v1beta1

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// corpus is the shared corpus of refused and accepted objects, which
// internal/crd's harness also applies to a real API server.
const corpus = "../../internal/crd/testdata"

// TestEvictionCorpusIsRefusedWithTheAPIServersMessages: every eviction
// and disruption budget of the refused corpus fails Go validation with
// exactly its "# want:" line (the API server's field error), and every one
// of the accepted corpus passes.
func TestEvictionCorpusIsRefusedWithTheAPIServersMessages(t *testing.T) {
	for _, dir := range []string{"refused", "accepted"} {
		evictions, _ := filepath.Glob(filepath.Join(corpus, dir, "clusterresourceplacementeviction-*.yaml"))
		budgets, _ := filepath.Glob(filepath.Join(corpus, dir, "clusterresourceplacementdisruptionbudget-*.yaml"))
		files := append(evictions, budgets...)
		if len(files) == 0 {
			t.Fatalf("no evictions or budgets in %s", dir)
		}
		for _, f := range files {
			t.Run(dir+"/"+filepath.Base(f), func(t *testing.T) {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				want := ""
				for _, line := range strings.Split(string(data), "\n") {
					if w, ok := strings.CutPrefix(line, "# want: "); ok {
						want = w
					}
				}
				got := validateCorpusFile(t, string(data))
				if got != want {
					t.Errorf("validation says %q; want %q", got, want)
				}
			})
		}
	}
}

// validateCorpusFile validates the file's object, or, with two documents,
// the second as an update of the first.
func validateCorpusFile(t *testing.T, data string) string {
	t.Helper()
	docs := strings.Split(data, "\n---\n")
	var errs field.ErrorList
	switch {
	case strings.Contains(docs[0], "kind: "+KindClusterResourcePlacementEviction):
		evictions := make([]*ClusterResourcePlacementEviction, len(docs))
		for i, d := range docs {
			evictions[i] = &ClusterResourcePlacementEviction{}
			if err := yaml.UnmarshalStrict([]byte(d), evictions[i]); err != nil {
				t.Fatal(err)
			}
		}
		cur := evictions[len(evictions)-1]
		errs = ValidateEviction(cur)
		if len(evictions) == 2 {
			errs = append(errs, ValidateEvictionUpdate(evictions[0], cur)...)
		}
	default:
		b := &ClusterResourcePlacementDisruptionBudget{}
		if err := yaml.UnmarshalStrict([]byte(docs[0]), b); err != nil {
			t.Fatal(err)
		}
		errs = ValidateDisruptionBudget(b)
	}
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return strings.Join(out, "; ")
}
