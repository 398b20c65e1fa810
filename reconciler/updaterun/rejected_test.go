package updaterun

import (
	"testing"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// TestInitializationRefusesARejectedSnapshot: a run whose resource snapshot
// the placement rejects (gitfleet.io/rejected-snapshot-<index>) fails to
// initialize with gitfleet's reason and the annotation's reason, whether
// it names the index or takes the latest; another index, or a rejection
// with no reason (which validation refuses), does not stop it.
func TestInitializationRefusesARejectedSnapshot(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		index       string // "": the latest, a new index 1 of a changed selection
		want        string // "" = initialized
	}{
		{name: "the named index", annotations: map[string]string{"gitfleet.io/rejected-snapshot-0": "crash loop in canary (incident 42)"},
			index: "0", want: "crash loop in canary (incident 42)"},
		{name: "the latest, taken without an index", annotations: map[string]string{"gitfleet.io/rejected-snapshot-1": "bad"},
			index: "", want: "bad"},
		{name: "another index", annotations: map[string]string{"gitfleet.io/rejected-snapshot-1": "bad"}, index: "0"},
		{name: "no reason", annotations: map[string]string{"gitfleet.io/rejected-snapshot-0": " "}, index: "0"},
		{name: "a malformed index", annotations: map[string]string{"gitfleet.io/rejected-snapshot-00": "bad"}, index: "0"},
	}
	for _, f := range families {
		for _, tt := range tests {
			t.Run(f.name+"/"+tt.name, func(t *testing.T) {
				e := newEnv(t, f.ns).fixture()
				e.placement(func(p *fleet.Placement) { p.Annotations = tt.annotations })
				e.run.Spec.ResourceSnapshotIndex = tt.index
				idx := tt.index
				if idx == "" {
					e.withSelection("v1")
					idx = "1"
				}
				e.create()
				if _, err := e.pass(); err != nil {
					t.Fatalf("pass: %v", err)
				}
				run := e.get()
				if tt.want == "" {
					if !isTrue(find(run.Status.Conditions, fleet.StagedUpdateRunConditionInitialized), run.Generation) {
						t.Fatalf("not initialized:%s", condsString(run.Status.Conditions))
					}
					return
				}
				placement := placementName
				if f.ns != "" {
					placement = f.ns + "/" + placementName
				}
				msg := userMsg("resource snapshot index `" + idx + "` of placement `" + placement +
					"` is rejected by its annotation gitfleet.io/rejected-snapshot-" + idx + ": " + tt.want)
				wantConds(t, "run", run.Status.Conditions, cond{fleet.StagedUpdateRunConditionInitialized, "False",
					fleet.UpdateRunResourceSnapshotRejectedReason, msg})
				if got := e.rec.last(); got != "Run/Initialized/False/ResourceSnapshotRejected/"+FailureTypeUserError {
					t.Errorf("metric %s, want the rejection as a user error", got)
				}
				wantResult(t, "again", e.ok(), Result{Blocked: true, Ended: true})
			})
		}
	}
}
