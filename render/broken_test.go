package render

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// wantErr describes one expected ManifestError; Line 0 and empty strings
// are not checked except File and Field, which every row names.
type wantErr struct {
	File, Field, Kind, Name, Message string
	Line                             int
}

func matchErr(t *testing.T, got ManifestError, w wantErr) {
	t.Helper()
	if got.File != w.File || got.Field != w.Field || (w.Line != 0 && got.Line != w.Line) ||
		(w.Kind != "" && got.Kind != w.Kind) || (w.Name != "" && got.Name != w.Name) ||
		!strings.Contains(got.Message, w.Message) {
		t.Errorf("got  %#v\nwant %#v", got, w)
	}
	if !strings.HasPrefix(got.Error(), w.File) || !strings.Contains(got.Error(), w.Field) {
		t.Errorf("Error() %q does not name file %q and field %q", got.Error(), w.File, w.Field)
	}
}

// A commit in which an object cannot be read, identified or exist, or is
// defined twice, is refused whole: leaving that object out would delete
// its last good version from the fleet. Every problem is named with file,
// line and field; the fleet objects' own field errors found besides are
// listed too (Others), for validate.
func TestRenderRefusesACommitWhole(t *testing.T) {
	for _, tc := range []struct {
		dir    string
		opts   Options
		want   []wantErr
		others []wantErr
	}{
		{"yaml-syntax", Options{}, []wantErr{{File: "bad.yaml", Line: 7, Message: "YAML syntax error: did not find expected key"}}, nil},
		{"unknown-kind", Options{}, []wantErr{{File: "work.yaml", Line: 2, Field: "kind", Kind: "Work", Name: "example-work",
			Message: "kind Work is not supported by gitfleet"}}, nil},
		{"missing-field", Options{}, []wantErr{
			{File: "nokind.yaml", Line: 1, Field: "kind", Name: "what-am-i", Message: "required field is missing"},
			{File: "noname.yaml", Line: 3, Field: "metadata.name", Kind: "ConfigMap", Message: "required field is missing"},
		}, []wantErr{
			{File: "run.yaml", Line: 1, Kind: "ClusterStagedUpdateRun", Name: "example-run", Message: "Invalid value: null: " + blockedCEL},
			{File: "run.yaml", Line: 5, Field: "spec.placementName", Kind: "ClusterStagedUpdateRun", Name: "example-run", Message: "Required value"},
		}},
		{"duplicate-names", Options{}, []wantErr{{File: "b/cm.yaml", Line: 2, Kind: "ConfigMap", Name: "test-cm",
			Message: "duplicate definition: ConfigMap test-namespace/test-cm is also defined in a/cm.yaml:1"}}, nil},
		{"file-too-big", Options{MaxFileSize: 1024}, []wantErr{{File: "big.yaml", Message: "file is larger than the 1024 bytes limit"}}, nil},
		{"approval-outside", Options{}, []wantErr{{File: "approval.yaml", Line: 2, Field: "kind", Name: "example-run-after-canary",
			Message: "ClusterApprovalRequest objects belong in the approvals/ folder"}}, nil},
		{"old-version", Options{}, []wantErr{{File: "run.yaml", Line: 1, Field: "apiVersion", Name: "example-run",
			Message: "placement.kubernetes-fleet.io/v1alpha1 is not supported by gitfleet"}}, nil},
		{"no-namespace", Options{}, []wantErr{{File: "cm.yaml", Line: 3, Field: "metadata.namespace", Name: "floating",
			Message: "ConfigMap is namespaced; set metadata.namespace"}}, nil},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			c, err := Render(os.DirFS("testdata/broken/"+tc.dir), tc.opts)
			var refused *RefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("Render = %+v, %v; want a *RefusedError", c, err)
			}
			if c != nil {
				t.Errorf("a refused render returned content: %+v", c)
			}
			for _, list := range []struct {
				want []wantErr
				name string
				errs []ManifestError
			}{{want: tc.want, name: "Errors", errs: refused.Errors}, {want: tc.others, name: "Others", errs: refused.Others}} {
				if len(list.errs) != len(list.want) {
					t.Fatalf("%s: got %d, want %d: %v", list.name, len(list.errs), len(list.want), list.errs)
				}
				for i := range list.want {
					matchErr(t, list.errs[i], list.want[i])
				}
			}
			if len(refused.Errors) == 1 && err.Error() != refused.Errors[0].Error() {
				t.Errorf("Error() = %q, want the one problem %q", err.Error(), refused.Errors[0].Error())
			}
		})
	}
}

// A fleet object that is identified but whose fields are invalid is left
// out alone, as an API server would refuse that one object; the hub keeps
// its last accepted version (Content.Withheld), and every other object of
// the commit renders. Each repository holds one such object and a good
// ConfigMap "still-here".
func TestRenderWithholdsInvalidFleetObjectsAndKeepsTheRest(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want []wantErr
	}{
		{"override-unknown-field", []wantErr{{File: "cro.yaml", Line: 15, Field: "spec.policy.overrideRules[0].jsonPatchOverride",
			Kind: "ClusterResourceOverride", Name: "example-cro", Message: "unknown field"}}},
		{"override-forbidden-path", []wantErr{{File: "ro.yaml", Line: 21, Field: "spec.policy.overrideRules[0].jsonPatchOverrides[0].path",
			Kind: "ResourceOverride", Name: "example-ro",
			Message: `Invalid value: invalid JSONPatchOverride {replace /metadata/name {"renamed"}}: cannot override metadata fields except annotations and labels`}}},
		{"override-selected-twice", []wantErr{
			{File: "a.yaml", Line: 7, Field: "spec.clusterResourceSelectors[0]", Kind: "ClusterResourceOverride", Name: "cro-a",
				Message: "invalid resource selector {Group: Version:v1 Kind:Namespace Name:test-namespace LabelSelector:nil SelectionScope:NamespaceWithResources}: the resource has been selected by both cro-a and cro-b, which is not supported"},
			{File: "b.yaml", Line: 7, Field: "spec.clusterResourceSelectors[0]", Kind: "ClusterResourceOverride", Name: "cro-b",
				Message: "the resource has been selected by both cro-b and cro-a, which is not supported"},
		}},
		{"invalid-strategy", []wantErr{
			{File: "strategy.yaml", Line: 11, Field: "spec.stages[1].maxConcurrency", Kind: "ClusterStagedUpdateStrategy", Name: "example-strategy",
				Message: "Invalid value: 0: maxConcurrency must be at least 1"},
			{File: "waittime.yaml", Line: 11, Field: "spec.stages[0].afterStageTasks[0].waitTime", Name: "daily",
				Message: `Invalid value: "1d": spec.stages[0].afterStageTasks[0].waitTime in body should match`},
		}},
		{"invalid-state", []wantErr{{File: "run.yaml", Line: 1, Field: "", Name: "example-run",
			Message: "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"},
			{File: "run.yaml", Line: 8, Field: "spec.state", Name: "example-run",
				Message: `Unsupported value: "Running": supported values: "Initialize", "Run", "Stop"`}}},
		{"bad-label-selector", []wantErr{{File: "placement.yaml", Line: 10, Field: "spec.resourceSelectors[0].labelSelector", Name: "example-placement",
			Message: `the labelSelector in resource selector is invalid: "Maybe" is not a valid label selector operator`}}},
		{"unknown-field", []wantErr{{File: "strategy.yaml", Line: 9, Field: "spec.stages[0].maxConcurency", Name: "example-strategy",
			Message: "unknown field"}}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			c := renderDir(t, "testdata/broken/"+tc.dir, Options{})
			if len(c.Errors) != len(tc.want) {
				t.Fatalf("got %d errors, want %d: %v", len(c.Errors), len(tc.want), c.Errors)
			}
			for i := range tc.want {
				matchErr(t, c.Errors[i], tc.want[i])
			}
			if got := resourceKeys(c.Resources); !reflect.DeepEqual(got, []string{"ConfigMap test-namespace/still-here"}) {
				t.Errorf("resources = %v, want only the good ConfigMap", got)
			}
			if n := len(c.Members) + len(c.Placements) + len(c.Strategies) + len(c.Runs) + len(c.ClusterResourceOverrides) + len(c.ResourceOverrides); n != 0 {
				t.Errorf("%d invalid fleet objects reached the content", n)
			}
		})
	}
}

// Kustomize failures fail the whole render: there is no partial build to
// trust. The error names the file, and the field and its line where
// gitfleet refused a reference before building or kustomize's message
// names the entry.
func TestRenderKustomizeFailuresNameFileAndField(t *testing.T) {
	// A network attempt would fail differently (no git on PATH, dead proxy),
	// so matching gitfleet's own message proves none was made.
	t.Setenv("PATH", "")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	for _, tc := range []struct {
		dir  string
		opts Options
		want wantErr
	}{
		{"kustomize-escape", Options{}, wantErr{File: "kustomization.yaml", Line: 3, Field: "resources[1]", Message: `"../outside.yaml" escapes the repository root`}},
		{"kustomize-root-only", Options{Path: "app"}, wantErr{File: "app/kustomization.yaml", Line: 2, Field: "resources[0]",
			Message: "kustomize build failed: accumulating resources: accumulation err='accumulating resources from '../shared/cm.yaml': security; file 'shared/cm.yaml' is not in or below 'app'"}},
		{"remote-base", Options{}, wantErr{File: "kustomization.yaml", Line: 3, Field: "resources[1]",
			Message: "is a remote reference; gitfleet renders only what is in the commit (no network)"}},
		{"remote-file", Options{}, wantErr{File: "kustomization.yaml", Line: 4, Field: "patches[0].path",
			Message: "is a remote reference; gitfleet renders only what is in the commit (no network)"}},
		{"kustomize-syntax", Options{}, wantErr{File: "kustomization.yaml", Line: 2, Message: "YAML syntax error: did not find expected key"}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			c, err := Render(os.DirFS("testdata/broken/"+tc.dir), tc.opts)
			if err == nil {
				t.Fatalf("Render succeeded: %+v", c)
			}
			var merr *ManifestError
			if !errors.As(err, &merr) {
				t.Fatalf("error %v is not a *ManifestError", err)
			}
			matchErr(t, *merr, tc.want)
		})
	}
}

// blockedCEL is what the API server adds when a required field, an enum or
// a bound fails: the CEL rules are not run on such an object.
const blockedCEL = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
