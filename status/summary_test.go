package status

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/admission"
)

// runWith returns the waiting run with its run-level Progressing replaced
// and its stage edited by f.
func runWith(progressing *metav1.Condition, f func(r *fleet.UpdateRun)) *fleet.UpdateRun {
	r := waitingRun("")
	meta.RemoveStatusCondition(&r.Status.Conditions, "Progressing")
	if progressing != nil {
		r.Status.Conditions = append(r.Status.Conditions, *progressing)
	}
	if f != nil {
		f(r)
	}
	return r
}

func c(typ string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	x := cond(typ, status, reason, "", 0)
	return &x
}

func TestRunProgressSaysWhereTheRunStands(t *testing.T) {
	stage := func(r *fleet.UpdateRun) *fleet.StageUpdatingStatus { return &r.Status.StagesStatus[0] }
	cases := []struct {
		name string
		run  *fleet.UpdateRun
		want string
	}{
		{"waiting for after-stage approval", waitingRun(""), "stage canary waiting for approval"},
		{"waiting for before-stage approval", runWith(c("Progressing", "False", fleet.UpdateRunWaitingReason), func(r *fleet.UpdateRun) {
			s := stage(r)
			s.Clusters[0].Conditions = nil
			s.BeforeStageTaskStatus = []fleet.StageTaskStatus{{Type: fleet.StageTaskTypeApproval, ApprovalRequestName: "example-run-before-canary"}}
			s.StartTime = nil
		}), "stage canary waiting for approval"},
		{"waiting for a timed wait", runWith(c("Progressing", "False", fleet.UpdateRunWaitingReason), func(r *fleet.UpdateRun) {
			stage(r).AfterStageTaskStatus = []fleet.StageTaskStatus{{Type: fleet.StageTaskTypeTimedWait}}
		}), "stage canary waiting"},
		{"updating", runWith(c("Progressing", "True", fleet.UpdateRunProgressingReason), func(r *fleet.UpdateRun) {
			s := stage(r)
			s.Clusters[0].Conditions = s.Clusters[0].Conditions[:1]
			s.Clusters = append(s.Clusters, fleet.ClusterUpdatingStatus{ClusterName: "member3", Conditions: s.Clusters[0].Conditions})
			s.Conditions = []metav1.Condition{*c("Progressing", "True", fleet.StageUpdatingStartedReason)}
		}), "stage canary updating member1, member3"},
		{"deleting", runWith(c("Progressing", "True", fleet.UpdateRunProgressingReason), func(r *fleet.UpdateRun) {
			s := stage(r)
			s.Conditions = append(s.Conditions, *c("Succeeded", "True", fleet.StageUpdatingSucceededReason))
			d := r.Status.DeletionStageStatus
			d.Clusters = []fleet.ClusterUpdatingStatus{{ClusterName: "member9", Conditions: []metav1.Condition{*c("Started", "True", fleet.ClusterUpdatingStartedReason)}}}
			d.Conditions = []metav1.Condition{*c("Progressing", "True", fleet.StageUpdatingStartedReason)}
		}), "deletion stage deleting member9"},
		{"stuck", runWith(c("Progressing", "False", fleet.UpdateRunStuckReason), func(r *fleet.UpdateRun) {
			stage(r).Conditions = []metav1.Condition{*c("Progressing", "True", fleet.StageUpdatingStartedReason)}
		}), "stuck in stage canary"},
		{"between stages", runWith(c("Progressing", "True", fleet.UpdateRunProgressingReason), func(r *fleet.UpdateRun) {
			stage(r).Conditions = []metav1.Condition{*c("Succeeded", "True", fleet.StageUpdatingSucceededReason)}
		}), "progressing"},
		{"stopping", runWith(c("Progressing", "Unknown", fleet.UpdateRunStoppingReason), nil), "stopping"},
		{"stopped", runWith(c("Progressing", "False", fleet.UpdateRunStoppedReason), nil), "stopped"},
		{"succeeded", runWith(c("Progressing", "False", fleet.UpdateRunSucceededReason), func(r *fleet.UpdateRun) {
			r.Status.Conditions = append(r.Status.Conditions, *c("Succeeded", "True", fleet.UpdateRunSucceededReason))
		}), "succeeded"},
		{"failed in a stage", runWith(c("Progressing", "False", fleet.UpdateRunFailedReason), func(r *fleet.UpdateRun) {
			r.Status.Conditions = append(r.Status.Conditions, *c("Succeeded", "False", fleet.UpdateRunFailedReason))
			stage(r).Conditions = []metav1.Condition{*c("Succeeded", "False", fleet.StageUpdatingFailedReason)}
		}), "failed in stage canary"},
		{"failed validation", runWith(c("Progressing", "False", fleet.UpdateRunFailedReason), func(r *fleet.UpdateRun) {
			r.Status.Conditions = append(r.Status.Conditions, *c("Succeeded", "False", fleet.UpdateRunFailedReason))
		}), "failed"},
		{"failed to initialize", &fleet.UpdateRun{Status: fleet.UpdateRunStatus{Conditions: []metav1.Condition{*c("Initialized", "False", fleet.UpdateRunInitializeFailedReason)}}}, "failed to initialize"},
		{"initialized only", runWith(nil, nil), "initialized"},
		{"just created", &fleet.UpdateRun{}, "created"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := RunProgress(tc.run); got != tc.want {
				t.Errorf("RunProgress = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSummarizeTellsWhatHappened(t *testing.T) {
	run := waitingRun("")
	done := runWith(c("Progressing", "False", fleet.UpdateRunSucceededReason), func(r *fleet.UpdateRun) {
		r.Status.Conditions = append(r.Status.Conditions, *c("Succeeded", "True", fleet.UpdateRunSucceededReason))
	})
	other := waitingRun("team-a")
	w := func(paths ...string) map[string][]byte {
		m := map[string][]byte{}
		for _, p := range paths {
			m[p] = []byte("x")
		}
		return m
	}
	cases := []struct {
		name    string
		changes Changeset
		objects map[string]runtime.Object
		want    string
	}{
		{"one run waits for approval, with its request",
			Changeset{Writes: w("status/runs/example-run.yaml", "approvals/example-run-after-canary.yaml")},
			map[string]runtime.Object{"status/runs/example-run.yaml": run},
			"status: example-run stage canary waiting for approval\n\nAlso: 1 approval request updated."},
		{"one run succeeded",
			Changeset{Writes: w("status/runs/example-run.yaml")},
			map[string]runtime.Object{"status/runs/example-run.yaml": done},
			"status: example-run succeeded"},
		{"bindings and a run",
			Changeset{Writes: w("status/bindings/p/m1.yaml", "status/bindings/p/m2.yaml", "status/bindings/p/m3.yaml", "status/placements/p.yaml")},
			nil,
			"status: 3 bindings, 1 placement updated"},
		{"two runs",
			Changeset{Writes: w("status/runs/example-run.yaml", "status/runs/team-a/example-run.yaml", "status/bindings/p/m1.yaml")},
			map[string]runtime.Object{"status/runs/example-run.yaml": done, "status/runs/team-a/example-run.yaml": other},
			"status: 2 runs, 1 binding updated\n\nexample-run: succeeded\nteam-a/example-run: stage canary waiting for approval"},
		{"only removals",
			Changeset{Deletes: []string{"status/snapshots/p/0.yaml", "status/snapshots/p/0-1.yaml", "status/strategies/s.yaml"}},
			nil,
			"status: 2 snapshots, 1 strategy removed"},
		{"updates and removals",
			Changeset{Writes: w("status/clusters/m1.yaml", "status/strategies/a.yaml", "status/strategies/b.yaml"), Deletes: []string{"status/bindings/p/m1.yaml"}},
			nil,
			"status: 2 strategies, 1 cluster updated; 1 binding removed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.changes, tc.objects, nil); got != tc.want {
				t.Errorf("Summarize =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// A refused change whose only trace is the rejected-change annotation is
// what the commit title says, not the progress the run already had; a
// refusal that comes with progress is in the body.
func TestSummarizeNamesARefusedChange(t *testing.T) {
	run := waitingRun("")
	changed := run.DeepCopy()
	changed.Spec.PlacementName = "another-placement"
	why := admission.Update(run, changed).ToAggregate().Error()
	refused := func(r *fleet.UpdateRun, note string) *fleet.UpdateRun {
		r = r.DeepCopy()
		r.Annotations = map[string]string{fleet.RejectedChangeAnnotation: note}
		return r
	}
	immutable := "the change to ClusterStagedUpdateRun example-run in run.yaml was rejected: " + why + "; the last accepted spec is still in use"
	broken := "the manifest no longer renders (run.yaml:5: ClusterStagedUpdateRun example-run: unknown field \"spec.placementNam\"); the last accepted spec is still in use"
	encoded := func(r *fleet.UpdateRun) []byte {
		data, err := Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	const path, sourcePath = "status/runs/example-run.yaml", "status/sources/main.yaml"
	applied := &fleet.GitSource{Spec: fleet.GitSourceSpec{Branch: "main"}, Status: fleet.GitSourceStatus{LastAppliedCommit: "0123456789abcdef"}}
	progressed := runWith(c("Progressing", "False", fleet.UpdateRunStoppedReason), nil)
	cases := []struct {
		name   string
		now    *fleet.UpdateRun
		before []byte
		also   []string
		want   string
	}{
		{"only the annotation changed", refused(run, immutable), encoded(run), nil,
			"status: example-run change refused: placementName is immutable"},
		{"a file that no longer renders", refused(run, broken), encoded(run), nil,
			"status: example-run change refused: run.yaml no longer renders"},
		{"a different refusal", refused(run, broken), encoded(refused(run, immutable)), nil,
			"status: example-run change refused: run.yaml no longer renders"},
		{"the refusal with progress", refused(progressed, immutable), encoded(run), nil,
			"status: example-run stopped\n\nexample-run change refused: placementName is immutable"},
		{"the refusal with a binding", refused(run, immutable), encoded(run), []string{"status/bindings/p/m1.yaml"},
			"status: example-run change refused: placementName is immutable\n\nAlso: 1 binding updated."},
		{"the refusal with the commit it refused applied", refused(run, immutable), encoded(run), []string{sourcePath},
			"status: example-run change refused: placementName is immutable\n\nsource main applied 0123456789ab"},
		{"the same refusal again is no news", refused(progressed, immutable), encoded(refused(run, immutable)), nil,
			"status: example-run stopped"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ch := Changeset{Writes: map[string][]byte{path: encoded(tc.now)}}
			for _, p := range tc.also {
				ch.Writes[p] = []byte("x")
			}
			objects := map[string]runtime.Object{path: tc.now}
			for _, p := range tc.also {
				if p == sourcePath {
					objects[p] = applied
				}
			}
			got := Summarize(ch, objects, map[string][]byte{path: tc.before})
			if got != tc.want {
				t.Errorf("Summarize =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// A new latest resource snapshot that removes resources leads the subject
// with its placement, index and count; the same snapshot written again
// (flipped to not latest, or rewritten) is no news.
func TestSummarizeLeadsWithRemovedResources(t *testing.T) {
	snap := func(ns, placement, index, latest, removed string) *fleet.ResourceSnapshot {
		s := &fleet.ResourceSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: placement + "-" + index + "-snapshot",
			Labels:      map[string]string{fleet.PlacementTrackingLabel: placement, fleet.ResourceIndexLabel: index, fleet.IsLatestSnapshotLabel: latest},
			Annotations: map[string]string{fleet.ResourceGroupHashAnnotation: "h"}}}
		if removed != "" {
			s.Annotations[fleet.RemovedResourcesAnnotation] = removed
		}
		return s
	}
	const one, team, old, placement = "status/snapshots/example-placement/1.yaml", "status/snapshots/team-a/web/3.yaml", "status/snapshots/example-placement/0.yaml", "status/placements/example-placement.yaml"
	cases := []struct {
		name    string
		objects map[string]runtime.Object
		before  map[string][]byte
		want    string
	}{
		{"one resource removed", map[string]runtime.Object{one: snap("", "example-placement", "1", "true", "1"), old: snap("", "example-placement", "0", "false", ""), placement: nil},
			map[string][]byte{old: []byte("x"), placement: []byte("x")},
			"status: example-placement snapshot 1 removes 1 resource; 2 snapshots, 1 placement updated"},
		{"two placements remove resources", map[string]runtime.Object{one: snap("", "example-placement", "1", "true", "1"), team: snap("team-a", "web", "3", "true", "2")}, nil,
			"status: example-placement snapshot 1 removes 1 resource; 2 snapshots updated\n\nteam-a/web snapshot 3 removes 2 resources"},
		{"with a run's progress", map[string]runtime.Object{one: snap("", "example-placement", "1", "true", "1"), "status/runs/example-run.yaml": waitingRun("")}, nil,
			"status: example-placement snapshot 1 removes 1 resource; example-run stage canary waiting for approval\n\nAlso: 1 snapshot updated."},
		{"a snapshot that removes nothing", map[string]runtime.Object{one: snap("", "example-placement", "1", "true", "")}, nil,
			"status: example-placement snapshot 1 recorded; 1 snapshot updated"},
		{"the snapshot flipped to not latest", map[string]runtime.Object{one: snap("", "example-placement", "1", "false", "1")}, map[string][]byte{one: []byte("x")},
			"status: 1 snapshot updated"},
		{"the latest snapshot rewritten", map[string]runtime.Object{one: snap("", "example-placement", "1", "true", "1")}, map[string][]byte{one: []byte("x")},
			"status: 1 snapshot updated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ch := Changeset{Writes: map[string][]byte{}}
			for p := range tc.objects {
				ch.Writes[p] = []byte("x")
			}
			if got := Summarize(ch, tc.objects, tc.before); got != tc.want {
				t.Errorf("Summarize =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestRefusalReasonKeepsTheDetail(t *testing.T) {
	for note, want := range map[string]string{
		`the change to ClusterStagedUpdateRun r in run.yaml was rejected: spec.state: Invalid value: "Initialize": invalid state transition: cannot transition from Run to Initialize; the last accepted spec is still in use`:                                              "invalid state transition: cannot transition from Run to Initialize",
		`the change to ClusterResourcePlacement p in p.yaml was rejected: spec.policy.placementType: Forbidden: placement type is immutable; the last accepted spec is still in use`:                                                                                        "placement type is immutable",
		`the change to ClusterStagedUpdateRun r in run.yaml was rejected: [spec.placementName: Invalid value: "b": placementName is immutable, spec.resourceSnapshotIndex: Invalid value: "2": resourceSnapshotIndex is immutable]; the last accepted spec is still in use`: "placementName is immutable",
		// The CRDs' CEL rules omit the value.
		`the change to ClusterStagedUpdateRun r in run.yaml was rejected: spec.state: Invalid value: invalid state transition: cannot transition from Run to Initialize; the last accepted spec is still in use`: "invalid state transition: cannot transition from Run to Initialize",
		`the change to ClusterStagedUpdateStrategy s in s.yaml was rejected: spec.stages[1].maxConcurrency: Invalid value: 0: maxConcurrency must be at least 1; the last accepted spec is still in use`:         "maxConcurrency must be at least 1",
		"something else": "something else",
	} {
		if got := refusalReason(note); got != want {
			t.Errorf("refusalReason(%q) = %q, want %q", note, got, want)
		}
	}
}

// A subject says what changed: a run whose only change is the spec.state a
// person set says so; a run written but reading as before does not hide
// a run removed and a snapshot recorded in the same commit.
func TestSummarizeSaysWhatChangedNotWhereARunStands(t *testing.T) {
	waiting := waitingRun("")
	stoppedSpec := waitingRun("")
	stoppedSpec.Spec.State = fleet.StateStop
	enc := func(o runtime.Object) []byte {
		data, err := Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	failed := runWith(c("Initialized", "False", fleet.UpdateRunInitializeFailedReason), func(r *fleet.UpdateRun) {
		r.Name = "run-nostrategy"
		r.Status.Conditions = []metav1.Condition{*c("Initialized", "False", fleet.UpdateRunInitializeFailedReason)}
	})
	snap5 := &fleet.ResourceSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "example-placement-5-snapshot",
		Labels: map[string]string{fleet.PlacementTrackingLabel: "example-placement", fleet.ResourceIndexLabel: "5", fleet.IsLatestSnapshotLabel: "true"}}}
	source := func(fetched string) *fleet.GitSource {
		return &fleet.GitSource{ObjectMeta: metav1.ObjectMeta{Name: "main"}, Spec: fleet.GitSourceSpec{URL: "https://git.example.com/fleet.git", Branch: "main", Path: "."},
			Status: fleet.GitSourceStatus{LastFetchedCommit: fetched, LastAppliedCommit: "0123456789abcdef"}}
	}
	const run, nostrategy, snap = "status/runs/example-run.yaml", "status/runs/run-nostrategy.yaml", "status/snapshots/example-placement/5.yaml"
	cases := []struct {
		name    string
		changes Changeset
		objects map[string]runtime.Object
		before  map[string][]byte
		want    string
	}{
		{"only spec.state Run to Stop", Changeset{Writes: map[string][]byte{run: nil}},
			map[string]runtime.Object{run: stoppedSpec}, map[string][]byte{run: enc(waiting)},
			"status: example-run spec.state Run → Stop"},
		{"a run removed and a snapshot recorded beside a run reading as before",
			Changeset{Writes: map[string][]byte{nostrategy: nil, snap: nil}, Deletes: []string{"status/runs/run-2.yaml"}},
			map[string]runtime.Object{nostrategy: failed, snap: snap5}, map[string][]byte{nostrategy: enc(failed)},
			"status: example-placement snapshot 5 recorded; run-2 removed; 1 run, 1 snapshot updated; 1 run removed\n\nrun-nostrategy: failed to initialize"},
		{"a source that applied the same commit and fetched another",
			Changeset{Writes: map[string][]byte{"status/sources/main.yaml": nil}},
			map[string]runtime.Object{"status/sources/main.yaml": source("bbbbbbbbbbbbbbbb")}, map[string][]byte{"status/sources/main.yaml": enc(source("aaaaaaaaaaaaaaaa"))},
			"status: source main applied 0123456789ab, fetched bbbbbbbbbbbb"},
		{"a run's new progress is still the subject", Changeset{Writes: map[string][]byte{run: nil}},
			map[string]runtime.Object{run: waiting}, map[string][]byte{run: enc(stoppedSpec)},
			"status: example-run spec.state Stop → Run"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Summarize(tc.changes, tc.objects, tc.before); got != tc.want {
				t.Errorf("Summarize =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// With a status branch, the tracked branch's commit of a pass holds only
// approvals/: its subject names the requests, the body the pass's status.
func TestApprovalsMessageNamesTheRequests(t *testing.T) {
	const statusMsg = "status: example-run succeeded\n\nAlso: 3 bindings updated."
	for _, tc := range []struct {
		name    string
		changes Changeset
		want    string
	}{
		{"one request", Changeset{Writes: map[string][]byte{"approvals/example-run-after-canary.yaml": nil}},
			"status: approval request example-run-after-canary updated\n\nThe status of the same pass, on branch gitfleet-status: example-run succeeded"},
		{"written and removed", Changeset{Writes: map[string][]byte{"approvals/team-a/web-after-prod.yaml": nil, "approvals/a.yaml": nil},
			Deletes: []string{"approvals/old-run-after-canary.yaml"}},
			"status: approval requests a, team-a/web-after-prod updated; approval request old-run-after-canary removed\n\nThe status of the same pass, on branch gitfleet-status: example-run succeeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ApprovalsMessage(tc.changes, statusMsg, "gitfleet-status"); got != tc.want {
				t.Errorf("ApprovalsMessage =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
