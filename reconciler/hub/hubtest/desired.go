package hubtest

import (
	"maps"
	"slices"
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// The behaviours below are the Git loop's inputs (hub.Desired): how the
// objects of the tracked branch, gitfleet's notes and merged approvals
// reach the hub.

var desiredBehaviours = []struct {
	name string
	test func(*suite, hub.Desired)
}{
	{"apply takes the spec, keeps the status, raises the generation on spec changes", (*suite).applyKeepsStatus},
	{"notes are set and removed without a new generation", (*suite).notesKeepTheGeneration},
	{"delete removes people's objects; a run waits for the engine", (*suite).deleteRemoves},
	{"a merged approval reaches the request's status", (*suite).approvalFromGit},
	{"overrides are applied, listed and deleted", (*suite).overridesApplied},
	{"a run's failure policy and a stage's budget read back as written", (*suite).failurePolicyIsKept},
	{"a placement's rejected snapshots and a run's rollback note read back as written", (*suite).rejectionsAndRollbackNotesAreKept},
}

func (s *suite) desired() hub.Desired {
	d, ok := s.h.(hub.Desired)
	if !ok {
		s.t.Skipf("%T takes no objects from Git", s.h)
	}
	return d
}

func (s *suite) applyKeepsStatus(d hub.Desired) {
	s.must(d.Apply(s.ctx, s.run("run", "app")))
	r := s.getRun("run")
	if r.Generation != 1 || r.Spec.PlacementName != "app" {
		s.t.Fatalf("an applied run: generation %d, placement %q; want 1, app", r.Generation, r.Spec.PlacementName)
	}
	r.Status.Conditions = []metav1.Condition{condition(fleet.StagedUpdateRunConditionInitialized, 1)}
	s.must(s.h.UpdateUpdateRunStatus(s.ctx, r))
	rv := s.getRun("run").ResourceVersion
	s.must(d.Apply(s.ctx, s.run("run", "app")))
	if got := s.getRun("run"); got.ResourceVersion != rv {
		s.t.Errorf("applying an unchanged run wrote it: resourceVersion %s → %s", rv, got.ResourceVersion)
	}
	next := s.run("run", "app")
	next.Spec.State = fleet.StateStop
	s.must(d.Apply(s.ctx, next))
	got := s.getRun("run")
	if got.Spec.State != fleet.StateStop || got.Generation != 2 || len(got.Status.Conditions) != 1 {
		s.t.Errorf("run after a spec change from Git: state %s, generation %d, %d conditions; want Stop, 2, 1",
			got.Spec.State, got.Generation, len(got.Status.Conditions))
	}

	p := s.placement("app")
	p.Labels = map[string]string{"team": "a"}
	s.must(d.Apply(s.ctx, p))
	p.Labels = map[string]string{"team": "b"}
	s.must(d.Apply(s.ctx, p))
	gotP, err := s.h.GetPlacement(s.ctx, s.key("app"))
	s.must(err)
	if gotP.Generation != 1 || !maps.Equal(gotP.Labels, p.Labels) {
		s.t.Errorf("placement after a label change from Git: generation %d, labels %v; want 1, %v", gotP.Generation, gotP.Labels, p.Labels)
	}

	s.must(d.Apply(s.ctx, &fleet.UpdateStrategy{ObjectMeta: s.meta("rollout", nil),
		Spec: fleet.UpdateStrategySpec{Stages: []fleet.StageConfig{{Name: "all", LabelSelector: &metav1.LabelSelector{}}}}}))
	strategies, err := d.ListUpdateStrategies(s.ctx)
	s.must(err)
	if !slices.Contains(names(strategies), "rollout") {
		s.t.Errorf("ListUpdateStrategies = %v; want rollout among them", names(strategies))
	}
}

func (s *suite) notesKeepTheGeneration(d hub.Desired) {
	s.must(d.Apply(s.ctx, s.run("run", "app")))
	kind := fleet.UpdateRunKind(s.ns)
	s.must(d.Annotate(s.ctx, kind, s.key("run"), fleet.RejectedChangeAnnotation, "refused"))
	got := s.getRun("run")
	if got.Annotations[fleet.RejectedChangeAnnotation] != "refused" || got.Generation != 1 {
		s.t.Errorf("run after a note: annotations %v, generation %d; want the note, 1", got.Annotations, got.Generation)
	}
	rv := got.ResourceVersion
	s.must(d.Annotate(s.ctx, kind, s.key("run"), fleet.RejectedChangeAnnotation, "refused"))
	if got := s.getRun("run"); got.ResourceVersion != rv {
		s.t.Errorf("an unchanged note was written: resourceVersion %s → %s", rv, got.ResourceVersion)
	}
	s.must(d.Annotate(s.ctx, kind, s.key("run"), fleet.RejectedChangeAnnotation, ""))
	if got := s.getRun("run"); got.Annotations[fleet.RejectedChangeAnnotation] != "" {
		s.t.Errorf("run after the note was removed: annotations %v", got.Annotations)
	}
}

func (s *suite) deleteRemoves(d hub.Desired) {
	s.must(d.Apply(s.ctx, s.placement("app")))
	s.must(d.Delete(s.ctx, fleet.PlacementKind(s.ns), s.key("app")))
	if _, err := s.h.GetPlacement(s.ctx, s.key("app")); !hub.IsNotFound(err) {
		s.t.Errorf("a deleted placement: %v; want NotFound", err)
	}
	s.must(d.Delete(s.ctx, fleet.PlacementKind(s.ns), s.key("app")))

	s.must(d.Apply(s.ctx, s.run("run", "app")))
	r := s.getRun("run")
	r.Finalizers = []string{fleet.UpdateRunFinalizer}
	s.must(s.h.UpdateUpdateRunFinalizers(s.ctx, r))
	s.must(d.Delete(s.ctx, fleet.UpdateRunKind(s.ns), s.key("run")))
	if got := s.getRun("run"); got.DeletionTimestamp == nil {
		s.t.Error("a run deleted from Git with the engine's finalizer is not terminating")
	}
	s.must(s.h.RemoveUpdateRun(s.ctx, s.key("run")))
}

func (s *suite) approvalFromGit(d hub.Desired) {
	s.must(s.h.CreateApprovalRequest(s.ctx, s.approval("run-after-canary", "run", "canary")))
	a, err := s.h.GetApprovalRequest(s.ctx, s.key("run-after-canary"))
	s.must(err)
	fromGit := a.DeepCopy()
	fromGit.ResourceVersion = ""
	fromGit.Status.Conditions = []metav1.Condition{condition(fleet.ApprovalRequestConditionApproved, 1)}
	s.must(d.ApplyApprovalRequestStatus(s.ctx, fromGit))
	got, err := s.h.GetApprovalRequest(s.ctx, s.key("run-after-canary"))
	s.must(err)
	if !meta.IsStatusConditionTrue(got.Status.Conditions, fleet.ApprovalRequestConditionApproved) {
		s.t.Errorf("request after an approval from Git: %v; want Approved", got.Status.Conditions)
	}
	// Who approved, as serve records it: a note that leaves the approval be.
	const by = "Alice <alice@example.com> (merge commit 0123456789ab)"
	s.must(d.Annotate(s.ctx, fleet.ApprovalRequestKind(s.ns), s.key("run-after-canary"), fleet.ApprovedByAnnotation, by))
	got, err = s.h.GetApprovalRequest(s.ctx, s.key("run-after-canary"))
	s.must(err)
	if got.Annotations[fleet.ApprovedByAnnotation] != by || !meta.IsStatusConditionTrue(got.Status.Conditions, fleet.ApprovalRequestConditionApproved) {
		s.t.Errorf("request after who approved was recorded: annotations %v, conditions %v; want %s and Approved", got.Annotations, got.Status.Conditions, by)
	}
}

// override is a ClusterResourceOverride on the cluster-scoped family, a
// ResourceOverride on the namespaced one, replacing /data/value with value.
func (s *suite) override(name, value string) Object {
	rules := &fleet.OverridePolicy{OverrideRules: []fleet.OverrideRule{{
		ClusterSelector: &fleet.ClusterSelector{ClusterSelectorTerms: []fleet.ClusterSelectorTerm{{}}},
		OverrideType:    fleet.JSONPatchOverrideType,
		JSONPatchOverrides: []fleet.JSONPatchOverride{{Operator: fleet.JSONPatchOverrideOpReplace, Path: "/data/value",
			Value: apiextensionsv1.JSON{Raw: []byte(strconv.Quote(value))}}},
	}}}
	if s.ns == "" {
		return &fleet.ClusterResourceOverride{ObjectMeta: s.meta(name, nil), Spec: fleet.ClusterResourceOverrideSpec{
			ClusterResourceSelectors: []fleet.ResourceSelectorTerm{{Version: "v1", Kind: "Namespace", Name: "app"}},
			Policy:                   rules}}
	}
	return &fleet.ResourceOverride{ObjectMeta: s.meta(name, nil), Spec: fleet.ResourceOverrideSpec{
		ResourceSelectors: []fleet.ResourceSelector{{Version: "v1", Kind: "ConfigMap", Name: "config"}},
		Policy:            rules}}
}

// listOverrides lists the family's overrides.
func (s *suite) listOverrides(d hub.Desired) []Object {
	var out []Object
	if s.ns == "" {
		l, err := d.ListClusterResourceOverrides(s.ctx)
		s.must(err)
		for _, o := range l {
			out = append(out, o)
		}
		return out
	}
	l, err := d.ListResourceOverrides(s.ctx)
	s.must(err)
	for _, o := range l {
		out = append(out, o)
	}
	return out
}

func (s *suite) overridesApplied(d hub.Desired) {
	only := func(what string, wantGeneration int64) Object {
		s.t.Helper()
		l := s.listOverrides(d)
		if len(l) != 1 || l[0].GetName() != "env" || l[0].GetGeneration() != wantGeneration {
			s.t.Fatalf("overrides %s: %v; want env at generation %d", what, names(l), wantGeneration)
		}
		return l[0]
	}
	s.must(d.Apply(s.ctx, s.override("env", "a")))
	rv := only("after an apply", 1).GetResourceVersion()
	s.must(d.Apply(s.ctx, s.override("env", "a")))
	if got := only("after an unchanged apply", 1).GetResourceVersion(); got != rv {
		s.t.Errorf("applying an unchanged override wrote it: resourceVersion %s → %s", rv, got)
	}
	s.must(d.Apply(s.ctx, s.override("env", "b")))
	only("after a spec change", 2)

	kind := fleet.KindClusterResourceOverride
	if s.ns != "" {
		kind = fleet.KindResourceOverride
	}
	s.must(d.Delete(s.ctx, kind, s.key("env")))
	await.Until(s.t, "the deleted override to leave the list", func() bool { return len(s.listOverrides(d)) == 0 })
	s.must(d.Delete(s.ctx, kind, s.key("env")))
}
