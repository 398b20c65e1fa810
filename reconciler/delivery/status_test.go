package delivery

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// work is a Work at generation 2 with Work conditions (type=status[:reason])
// and manifests, each with its own conditions.
func work(name string, conds []metav1.Condition, manifests ...fleet.ManifestCondition) *fleet.Work {
	return &fleet.Work{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 2, Labels: map[string]string{}},
		Status: fleet.WorkStatus{Conditions: conds, ManifestConditions: manifests}}
}

func wc(t string, s metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, ObservedGeneration: gen}
}

func manifest(name string, conds ...metav1.Condition) fleet.ManifestCondition {
	return fleet.ManifestCondition{Identifier: fleet.WorkResourceIdentifier{Version: "v1", Kind: "ConfigMap", Namespace: "app", Name: name},
		Conditions: conds}
}

var (
	appliedTrue     = wc(fleet.WorkConditionTypeApplied, metav1.ConditionTrue, "WorkAllManifestsApplied", 2)
	appliedFalse    = wc(fleet.WorkConditionTypeApplied, metav1.ConditionFalse, "WorkNotAllManifestsApplied", 2)
	appliedStale    = wc(fleet.WorkConditionTypeApplied, metav1.ConditionTrue, "WorkAllManifestsApplied", 1)
	availableTrue   = wc(fleet.WorkConditionTypeAvailable, metav1.ConditionTrue, "WorkAllManifestsAvailable", 2)
	availableFalse  = wc(fleet.WorkConditionTypeAvailable, metav1.ConditionFalse, "WorkNotAllManifestsAvailable", 2)
	untrackable     = wc(fleet.WorkConditionTypeAvailable, metav1.ConditionTrue, WorkNotTrackableReason, 2)
	diffReported    = wc(fleet.WorkConditionTypeDiffReported, metav1.ConditionTrue, "DiffReportedSucceeded", 2)
	manifestApplied = wc(fleet.WorkConditionTypeApplied, metav1.ConditionTrue, "Applied", 2)
	manifestFailed  = wc(fleet.WorkConditionTypeApplied, metav1.ConditionFalse, member.ManifestApplyFailedReason, 2)
	manifestWaiting = wc(fleet.WorkConditionTypeAvailable, metav1.ConditionFalse, member.ManifestNotAvailableYetReason, 2)
	// wholeFailed: the Work's apply failed as a whole (a CRD of it never
	// became established), its cause on its own Applied.
	wholeFailed = metav1.Condition{Type: fleet.WorkConditionTypeApplied, Status: metav1.ConditionFalse, Reason: WorkAppliedFailedReason,
		Message:            "waiting for the CRDs and namespaces to be ready: failed early due to stalled resources: [CustomResourceDefinition/gadgets.example.com status: 'Failed']",
		ObservedGeneration: 2}
	// manifestUnavailable failed its availability check (kstatus Failed).
	manifestUnavailable = wc(fleet.WorkConditionTypeAvailable, metav1.ConditionFalse, "Failed", 2)
)

func TestBindingStatusFromItsWorks(t *testing.T) {
	drift := manifest("drifted", manifestApplied)
	drift.DriftDetails = &fleet.DriftDetails{ObservedInMemberClusterGeneration: 3, ObservedDrifts: []fleet.PatchDetail{{Path: "/data/a"}}}
	diff := manifest("diffed")
	diff.DiffDetails = &fleet.DiffDetails{ObservedDiffs: []fleet.PatchDetail{{Path: "/data/b"}}}
	envWork := work("app-work-envelope-1", []metav1.Condition{appliedFalse}, manifest("wrapped", manifestFailed))
	envWork.Labels = map[string]string{fleet.EnvelopeTypeLabel: fleet.ResourceEnvelopeType, fleet.EnvelopeNameLabel: "env", fleet.EnvelopeNamespaceLabel: "app"}

	type want struct {
		applied, available, diffReported string // "" absent, else status/reason/message
		failed, drifted, diffed          []string
	}
	cases := []struct {
		name       string
		reportDiff bool
		works      []*fleet.Work
		want       want
	}{
		{name: "a work not reported on yet leaves Applied False and no placements",
			works: []*fleet.Work{work("app-work", nil), work("app-1", []metav1.Condition{appliedTrue, availableTrue})},
			want:  want{applied: "False/NotAllWorkHaveBeenApplied/Work object app-work has not yet completed the apply op"}},
		{name: "a report on an older generation of the work is not counted",
			works: []*fleet.Work{work("app-work", []metav1.Condition{appliedStale})},
			want:  want{applied: "False/NotAllWorkHaveBeenApplied/Work object app-work has not yet completed the apply op"}},
		{name: "a failed apply names the work and its failed, diffed and drifted manifests, with their envelope",
			works: []*fleet.Work{work("app-work", []metav1.Condition{appliedTrue, availableTrue}, drift, diff), envWork},
			want: want{applied: "False/NotAllWorkHaveBeenApplied/Work object app-work-envelope-1 has failed to apply",
				failed: []string{"env/wrapped:ManifestApplyFailed"}, drifted: []string{"drifted"}, diffed: []string{"diffed"}}},
		{name: "a work that failed as a whole, no manifest naming it, adds its cause to KubeFleet's message",
			works: []*fleet.Work{work("app-work", []metav1.Condition{wholeFailed}, manifest("crd", manifestApplied), manifest("cr"))},
			want:  want{applied: "False/NotAllWorkHaveBeenApplied/Work object app-work has failed to apply: " + wholeFailed.Message}},
		{name: "a manifest that names the failure keeps KubeFleet's message exact, the Work's cause aside",
			works: []*fleet.Work{work("app-work", []metav1.Condition{wholeFailed}, manifest("bad", manifestFailed))},
			want:  want{applied: "False/NotAllWorkHaveBeenApplied/Work object app-work has failed to apply", failed: []string{"bad:ManifestApplyFailed"}}},
		{name: "a cause on an older generation of the work is not counted",
			works: []*fleet.Work{work("app-work", []metav1.Condition{wc(fleet.WorkConditionTypeApplied, metav1.ConditionFalse, WorkAppliedFailedReason, 1)})},
			want:  want{applied: "False/NotAllWorkHaveBeenApplied/Work object app-work has not yet completed the apply op"}},
		{name: "applied and not available yet is in progress and names the manifests it waits for",
			works: []*fleet.Work{work("app-work", []metav1.Condition{appliedTrue, availableFalse}, manifest("deploy", manifestApplied, manifestWaiting))},
			want: want{applied: "True/AllWorkHaveBeenApplied/All corresponding work objects are applied",
				available: "False/ResourceNotAvailableYet/Work object app-work is not yet available",
				failed:    []string{"deploy:ManifestNotAvailableYet"}}},
		{name: "a manifest that failed its availability check is KubeFleet's failure, before works still waiting",
			works: []*fleet.Work{work("app-1", []metav1.Condition{appliedTrue, availableFalse}, manifest("waiting", manifestApplied, manifestWaiting)),
				work("app-work", []metav1.Condition{appliedTrue, availableFalse}, manifest("deploy", manifestApplied, manifestWaiting),
					manifest("broken", manifestApplied, manifestUnavailable))},
			want: want{applied: "True/AllWorkHaveBeenApplied/All corresponding work objects are applied",
				available: "False/NotAllWorkAreAvailable/Work object app-work is not yet available",
				failed:    []string{"waiting:ManifestNotAvailableYet", "deploy:ManifestNotAvailableYet", "broken:Failed"}}},
		{name: "a work not available without saying which manifest is KubeFleet's failure",
			works: []*fleet.Work{work("app-work", []metav1.Condition{appliedTrue, availableFalse})},
			want: want{applied: "True/AllWorkHaveBeenApplied/All corresponding work objects are applied",
				available: "False/NotAllWorkAreAvailable/Work object app-work is not yet available"}},
		{name: "applied and available reports drifts only",
			works: []*fleet.Work{work("app-work", []metav1.Condition{appliedTrue, availableTrue}, drift, diff)},
			want: want{applied: "True/AllWorkHaveBeenApplied/All corresponding work objects are applied",
				available: "True/AllWorkAreAvailable/All corresponding work objects are available", drifted: []string{"drifted"}}},
		{name: "untrackable availability is Available with KubeFleet's reason",
			works: []*fleet.Work{work("app-work", []metav1.Condition{appliedTrue, availableTrue}), work("app-1", []metav1.Condition{appliedTrue, untrackable})},
			want: want{applied: "True/AllWorkHaveBeenApplied/All corresponding work objects are applied",
				available: "True/NotAllWorkAreAvailabilityTrackable/The availability of work object app-1 is not trackable"}},
		{name: "ReportDiff reports DiffReported and the diffs, never Applied",
			reportDiff: true,
			works:      []*fleet.Work{work("app-work", []metav1.Condition{diffReported}, diff)},
			want:       want{diffReported: "True/AllWorkHaveDiffReported/All corresponding work objects have reported diff", diffed: []string{"diffed"}}},
		{name: "ReportDiff not reported yet has no diffs",
			reportDiff: true,
			works:      []*fleet.Work{work("app-work", nil, diff)},
			want:       want{diffReported: "False/NotAllWorkHaveDiffReported/Work object app-work has not yet completed diff reporting"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := binding("")
			if tc.reportDiff {
				b.Spec.ApplyStrategy = &fleet.ApplyStrategy{Type: fleet.ApplyStrategyTypeReportDiff}
			}
			conds, p := Status(b, tc.works)
			show := func(t string) string {
				c := meta.FindStatusCondition(conds, t)
				if c == nil {
					return ""
				}
				if c.ObservedGeneration != b.Generation {
					return "at another generation"
				}
				return string(c.Status) + "/" + c.Reason + "/" + c.Message
			}
			for _, c := range []struct{ typ, want string }{
				{fleet.ResourceBindingApplied, tc.want.applied},
				{fleet.ResourceBindingAvailable, tc.want.available},
				{fleet.ResourceBindingDiffReported, tc.want.diffReported},
			} {
				if got := show(c.typ); got != c.want {
					t.Errorf("%s = %q, want %q", c.typ, got, c.want)
				}
			}
			if show(fleet.ResourceBindingWorkSynchronized) != "True/AllWorkSynced/All of the works are synchronized to the latest" {
				t.Errorf("WorkSynchronized = %q", show(fleet.ResourceBindingWorkSynchronized))
			}
			var failed, drifted, diffed []string
			for _, f := range p.Failed {
				s := f.Name + ":" + f.Condition.Reason
				if f.Envelope != nil {
					s = f.Envelope.Name + "/" + s
				}
				failed = append(failed, s)
			}
			for _, d := range p.Drifted {
				drifted = append(drifted, d.Name)
			}
			for _, d := range p.Diffed {
				diffed = append(diffed, d.Name)
			}
			for _, l := range []struct {
				what      string
				got, want []string
			}{{"failed", failed, tc.want.failed}, {"drifted", drifted, tc.want.drifted}, {"diffed", diffed, tc.want.diffed}} {
				if len(l.got) != len(l.want) || (len(l.got) > 0 && !equalStrings(l.got, l.want)) {
					t.Errorf("%s placements %v, want %v", l.what, l.got, l.want)
				}
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// A pulled member's Works report PruneSkipped (member/kube.WorkApplier):
// the binding reports it after Applied, joined over its Works at their
// generation, as the push transport reports the same objects.
func TestBindingPruneSkippedFromItsWorks(t *testing.T) {
	cm := func(name string) fleet.ResourceIdentifier {
		return fleet.ResourceIdentifier{Version: "v1", Kind: "ConfigMap", Namespace: "app", Name: name}
	}
	skipped := func(gen int64, left ...fleet.ResourceIdentifier) metav1.Condition {
		c, _ := member.PruneSkipped(gen, left)
		c.Type = fleet.WorkConditionTypePruneSkipped
		return c
	}
	b := binding("")
	main := work("app-work", []metav1.Condition{appliedTrue, skipped(2, cm("a"), cm("c")), availableTrue})
	env := work("app-work-envelope-1", []metav1.Condition{appliedTrue, skipped(2, cm("b")), availableTrue})
	stale := work("app-1", []metav1.Condition{appliedTrue, skipped(1, cm("old")), availableTrue})
	conds, _ := Status(b, []*fleet.Work{stale, env, main})
	want, _ := member.PruneSkipped(b.Generation, []fleet.ResourceIdentifier{cm("a"), cm("b"), cm("c")})
	var types []string
	for _, c := range conds {
		types = append(types, c.Type)
	}
	if got := meta.FindStatusCondition(conds, fleet.ResourceBindingPruneSkipped); got == nil || *got != want {
		t.Errorf("PruneSkipped = %+v, want %+v", got, want)
	}
	if !equalStrings(types, []string{fleet.ResourceBindingOverridden, fleet.ResourceBindingWorkSynchronized, fleet.ResourceBindingApplied,
		fleet.ResourceBindingPruneSkipped, fleet.ResourceBindingAvailable}) {
		t.Errorf("condition types %v, want PruneSkipped after Applied as the push transport reports it", types)
	}
	conds, _ = Status(b, []*fleet.Work{work("app-work", []metav1.Condition{appliedTrue, availableTrue}), stale})
	if c := meta.FindStatusCondition(conds, fleet.ResourceBindingPruneSkipped); c != nil {
		t.Errorf("PruneSkipped = %+v from a report on an older generation only", c)
	}
}

// A Work written by another agent (KubeFleet's caps nothing) may carry
// causes of up to 32 KiB: the binding takes them capped (condmsg), its
// Applied message and each failed placement, or its own status write,
// with several of them, fails on the API server.
func TestLongCausesFromAWorkAreCappedOnTheBinding(t *testing.T) {
	long := strings.Repeat("x", 30000)
	capped := strings.Repeat("x", 976) + "… (29024 more characters)"
	whole := wholeFailed
	whole.Message = long
	failed := manifestFailed
	failed.Message = long
	b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app-m1", Generation: 1}}

	conds, _ := Status(b, []*fleet.Work{work("app-work", []metav1.Condition{whole}, manifest("cr"))})
	if c, want := meta.FindStatusCondition(conds, fleet.ResourceBindingApplied), "Work object app-work has failed to apply: "+capped; c == nil || c.Message != want {
		t.Errorf("Applied = %+v, want the message %q", c, want)
	}
	w := work("app-work", []metav1.Condition{appliedFalse}, manifest("bad", failed))
	_, p := Status(b, []*fleet.Work{w})
	if len(p.Failed) != 1 || p.Failed[0].Condition.Message != capped {
		t.Errorf("failed placements = %+v, want one with the message %q", p.Failed, capped)
	}
	if w.Status.ManifestConditions[0].Conditions[0].Message != long {
		t.Errorf("the Work's own manifest condition was cut")
	}
}
