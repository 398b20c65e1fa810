package kube_test

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/member"
	"github.com/gitfleet/gitfleet/reconciler/member/kube"
)

// driftCheck is the drift check interval of these tests: short, since each
// waits for a check to see a change it made.
const driftCheck = 100 * time.Millisecond

func withStrategy(d member.Delivery, s fleet.ApplyStrategy) member.Delivery {
	d.Binding.Spec.ApplyStrategy = fleet.DefaultApplyStrategy(&s)
	return d
}

// editConfigMap changes key of a ConfigMap on the member as kubectl edit
// would (a client update), and returns its new resourceVersion.
func (f *fixture) editConfigMap(name, value string) string {
	f.t.Helper()
	cm := f.get("member1", "v1", "ConfigMap", "test-namespace", name)
	must(f.t, unstructured.SetNestedField(cm.Object, value, "data", "key"))
	must(f.t, f.clusters[0].Client().Update(f.ctx, cm))
	return cm.GetResourceVersion()
}

// createConfigMap puts a ConfigMap on the member that gitfleet did not
// apply.
func (f *fixture) createConfigMap(name, value string) string {
	f.t.Helper()
	return f.create(configMap(name, value))
}

// create puts doc on the member as someone other than gitfleet.
func (f *fixture) create(doc string) string {
	f.t.Helper()
	u := &unstructured.Unstructured{}
	must(f.t, yaml.Unmarshal([]byte(doc), &u.Object))
	must(f.t, f.clusters[0].Client().Create(f.ctx, u))
	return u.GetResourceVersion()
}

func TestAnEditOnTheMemberIsReportedAsDriftAndKeptUnderIfNotDrifted(t *testing.T) {
	f := newFixture(t, nil)
	drivers := f.startWith(driftCheck)
	d := withStrategy(delivery(t, "member1", 1, "place-0-snapshot", namespace, configMap("cm", "v1")),
		fleet.ApplyStrategy{WhenToApply: fleet.WhenToApplyTypeIfNotDrifted})
	f.deliverAvailable(drivers, d)

	f.editConfigMap("cm", "edited-by-hand")
	rep := f.reports.waitCond(t, d.Key(), 1, fleet.ResourceBindingApplied, metav1.ConditionFalse, member.WorkNotAppliedReason)
	if c := f.reports.cond(d.Key(), 1, fleet.ResourceBindingApplied); c.Message != "Work object place-work has failed to apply" {
		t.Errorf("Applied message = %q", c.Message)
	}
	if len(rep.drifted) != 1 {
		t.Fatalf("drifted = %+v, want the ConfigMap", rep.drifted)
	}
	dr := rep.drifted[0]
	want := []fleet.PatchDetail{{Path: "/data/key", ValueInMember: "edited-by-hand", ValueInHub: "v1"}}
	if dr.Kind != "ConfigMap" || dr.Name != "cm" || !reflect.DeepEqual(dr.ObservedDrifts, want) {
		t.Errorf("drifted = %+v, want ConfigMap cm with %+v", dr, want)
	}
	if len(rep.failed) != 1 || rep.failed[0].Condition.Reason != member.FoundDriftsReason ||
		rep.failed[0].Condition.Message != "Failed to apply the manifest (error: cannot apply manifest: drifts are found between the manifest and the object from the member cluster)" {
		t.Errorf("failed = %+v, want the ConfigMap with FoundDrifts", rep.failed)
	}
	if v := f.clusters[0].ConfigMapValue("test-namespace", "cm", "key"); v != "edited-by-hand" {
		t.Errorf("ConfigMap key = %q, want the edit kept", v)
	}

	// A new manifest is applied over the drift.
	d2 := withStrategy(delivery(t, "member1", 2, "place-1-snapshot", namespace, configMap("cm", "v2")),
		fleet.ApplyStrategy{WhenToApply: fleet.WhenToApplyTypeIfNotDrifted})
	f.deliverAvailable(drivers, d2)
	if v := f.clusters[0].ConfigMapValue("test-namespace", "cm", "key"); v != "v2" {
		t.Errorf("ConfigMap key = %q after a new manifest, want v2", v)
	}
	if rep := f.reports.get(d2.Key()); len(rep.drifted) != 0 || len(rep.failed) != 0 {
		t.Errorf("after the new manifest: drifted %+v, failed %+v, want none", rep.drifted, rep.failed)
	}
}

func TestTheDriftCheckReappliesAnEditUnderWhenToApplyAlways(t *testing.T) {
	f := newFixture(t, nil)
	drivers := f.startWith(driftCheck)
	d := delivery(t, "member1", 1, "place-0-snapshot", namespace, configMap("cm", "v1"))
	f.deliverAvailable(drivers, d)
	f.editConfigMap("cm", "edited-by-hand")
	await.Until(t, "the drift check restores the ConfigMap", func() bool {
		return f.clusters[0].ConfigMapValue("test-namespace", "cm", "key") == "v1"
	})
	if rep := f.reports.get(d.Key()); len(rep.drifted) != 0 {
		t.Errorf("drifted = %+v, want none: the apply owns the field and restored it", rep.drifted)
	}
}

func TestFullComparisonReportsFieldsOthersSetAsDrift(t *testing.T) {
	f := newFixture(t, nil)
	drivers := f.startWith(driftCheck)
	// Not the namespace: under a full comparison, the finalizer the API
	// server gives every namespace is a drift too (as on KubeFleet).
	f.create(namespace)
	d := withStrategy(delivery(t, "member1", 1, "place-0-snapshot", configMap("cm", "v1")),
		fleet.ApplyStrategy{ComparisonOption: fleet.ComparisonOptionTypeFullComparison})
	f.deliverAvailable(drivers, d)
	cm := f.get("member1", "v1", "ConfigMap", "test-namespace", "cm")
	must(t, unstructured.SetNestedField(cm.Object, "by-hand", "data", "extra"))
	must(t, f.clusters[0].Client().Update(f.ctx, cm))

	want := []fleet.PatchDetail{{Path: "/data/extra", ValueInMember: "by-hand"}}
	await.Until(t, "the drift check reports data.extra", func() bool {
		rep := f.reports.get(d.Key())
		return len(rep.drifted) == 1 && reflect.DeepEqual(rep.drifted[0].ObservedDrifts, want)
	})
	if c := f.reports.cond(d.Key(), 1, fleet.ResourceBindingAvailable); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Available = %+v, want True: drifts in fields others set do not fail the apply", c)
	}
	if v := f.clusters[0].ConfigMapValue("test-namespace", "cm", "extra"); v != "by-hand" {
		t.Errorf("data.extra = %q, want it left alone", v)
	}
}

func TestReportDiffReportsDiffsAndWritesNothingToTheMember(t *testing.T) {
	f := newFixture(t, nil)
	f.create(namespace)
	rv := f.createConfigMap("pre", "theirs")
	same := f.createConfigMap("same", "v1")
	d := withStrategy(delivery(t, "member1", 1, "place-0-snapshot", configMap("pre", "ours"), configMap("same", "v1"), configMap("absent", "x")),
		fleet.ApplyStrategy{Type: fleet.ApplyStrategyTypeReportDiff})
	must(t, f.drivers.Driver("member1").Deliver(f.ctx, pushed(t, d)))
	rep := f.reports.waitCond(t, d.Key(), 1, fleet.ResourceBindingDiffReported, metav1.ConditionTrue, member.AllWorkDiffReportedReason)

	if len(rep.diffed) != 2 {
		t.Fatalf("diffed = %+v, want pre and absent", rep.diffed)
	}
	pre, absent := rep.diffed[0], rep.diffed[1]
	if want := []fleet.PatchDetail{{Path: "/data/key", ValueInMember: "theirs", ValueInHub: "ours"}}; pre.Name != "pre" ||
		!reflect.DeepEqual(pre.ObservedDiffs, want) || pre.TargetClusterObservedGeneration == nil {
		t.Errorf("diffed[0] = %+v, want pre with %+v", pre, want)
	}
	if want := []fleet.PatchDetail{{Path: "/", ValueInHub: "(the whole object)"}}; absent.Name != "absent" ||
		!reflect.DeepEqual(absent.ObservedDiffs, want) || absent.TargetClusterObservedGeneration != nil {
		t.Errorf("diffed[1] = %+v, want absent with %+v and no generation", absent, want)
	}
	if c := f.reports.cond(d.Key(), 1, fleet.ResourceBindingApplied); c != nil {
		t.Errorf("Applied = %+v, want none under ReportDiff", c)
	}
	if got := f.get("member1", "v1", "ConfigMap", "test-namespace", "pre").GetResourceVersion(); got != rv {
		t.Errorf("pre was written: resourceVersion %s → %s", rv, got)
	}
	if got := f.get("member1", "v1", "ConfigMap", "test-namespace", "same").GetResourceVersion(); got != same {
		t.Errorf("same was written: resourceVersion %s → %s", same, got)
	}
	if f.get("member1", "v1", "ConfigMap", "test-namespace", "absent") != nil {
		t.Error("absent was created")
	}
	if f.get("member1", "v1", "ConfigMap", kube.InventoryNamespace, "place-work") != nil {
		t.Error("an inventory was written")
	}
}

func TestTakeoverOfAnObjectTheMemberAlreadyHas(t *testing.T) {
	for _, tt := range []struct {
		name     string
		when     fleet.WhenToTakeOverType
		theirs   string // the member's value before the delivery
		taken    bool
		reason   string // of the held object's failed placement
		message  string
		diffedTo string // valueInMember of the reported diff
	}{
		{name: "Always takes it over and applies", when: fleet.WhenToTakeOverTypeAlways, theirs: "theirs", taken: true},
		{name: "IfNoDiff takes over an equal object", when: fleet.WhenToTakeOverTypeIfNoDiff, theirs: "ours", taken: true},
		{name: "IfNoDiff leaves a differing object and reports the diff", when: fleet.WhenToTakeOverTypeIfNoDiff, theirs: "theirs",
			reason: member.FailedToTakeOverReason, diffedTo: "theirs",
			message: "Failed to apply the manifest (error: cannot take over object: configuration differences are found between the manifest object and the corresponding object in the member cluster)"},
		{name: "Never leaves even an equal object", when: fleet.WhenToTakeOverTypeNever, theirs: "ours",
			reason:  member.NotTakenOverReason,
			message: "Failed to apply the manifest (error: no ownership of the object in the member cluster; takeover is needed)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.create(namespace)
			rv := f.createConfigMap("pre", tt.theirs)
			d := withStrategy(delivery(t, "member1", 1, "place-0-snapshot", configMap("pre", "ours")),
				fleet.ApplyStrategy{WhenToTakeOver: tt.when})
			must(t, f.drivers.Driver("member1").Deliver(f.ctx, pushed(t, d)))
			cm := func() *unstructured.Unstructured { return f.get("member1", "v1", "ConfigMap", "test-namespace", "pre") }
			if tt.taken {
				f.reports.waitCond(t, d.Key(), 1, fleet.ResourceBindingAvailable, metav1.ConditionTrue, member.AllWorkAvailableReason)
				if got := cm(); got.GetLabels()[kube.PlacementLabel] != "place" || f.clusters[0].ConfigMapValue("test-namespace", "pre", "key") != "ours" {
					t.Errorf("pre = %v %v, want it taken over with the hub's value", got.GetLabels(), got.Object["data"])
				}
				return
			}
			rep := f.reports.waitCond(t, d.Key(), 1, fleet.ResourceBindingApplied, metav1.ConditionFalse, member.WorkNotAppliedReason)
			if len(rep.failed) != 1 || rep.failed[0].Name != "pre" || rep.failed[0].Condition.Reason != tt.reason || rep.failed[0].Condition.Message != tt.message {
				t.Errorf("failed = %+v, want pre with %s: %s", rep.failed, tt.reason, tt.message)
			}
			var wantDiffed []fleet.PatchDetail
			if tt.diffedTo != "" {
				wantDiffed = []fleet.PatchDetail{{Path: "/data/key", ValueInMember: tt.diffedTo, ValueInHub: "ours"}}
			}
			var gotDiffed []fleet.PatchDetail
			if len(rep.diffed) > 0 {
				gotDiffed = rep.diffed[0].ObservedDiffs
			}
			if !reflect.DeepEqual(gotDiffed, wantDiffed) {
				t.Errorf("diffed = %+v, want %+v", rep.diffed, wantDiffed)
			}
			if got := cm().GetResourceVersion(); got != rv {
				t.Errorf("pre was written: resourceVersion %s → %s", rv, got)
			}
		})
	}
}
