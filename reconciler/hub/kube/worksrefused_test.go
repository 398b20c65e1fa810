package kube

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

// A binding whose Works the hub refuses for good (here an admission
// policy; a Work too large or invalid alike) says so as KubeFleet's work
// generator does, WorkSynchronized=False SyncWorkFailed with the hub's
// refusal, where it said nothing but its RolloutStarted — or, with the
// rollout's start carrying delivery's in-progress report, said its Works
// were synchronized while none was written. Once the policy is lifted
// the Works are written and the binding says so.
func TestABindingWhoseWorksTheHubRefusesSaysWhy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	th := startHub(t)
	ctx := await.Context(t)
	h := th.newHub(t, Config{Rest: th.rest, Resources: selectWorkload, Deliver: true})
	th.apply(t, h, &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "pulled",
		Annotations: map[string]string{fleet.DriverAnnotation: fleet.DriverWork}}})
	stored := th.appPlacement(t, h)
	snap, _, err := resourcesnapshot.Ensure(ctx, h, stored, []*unstructured.Unstructured{workload}, "")
	if err != nil {
		t.Fatal(err)
	}

	const denial = "works are frozen for the audit"
	cs := kubernetes.NewForConfigOrDie(th.rest)
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "frozen"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{fleet.PlacementGroup},
						APIVersions: []string{"*"}, Resources: []string{"works"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: denial}}}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "frozen"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "frozen",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The policy is in force once it denies a Work (dry run): before
	// that the hub would take the binding's.
	probe := &unstructured.Unstructured{Object: map[string]any{"apiVersion": fleet.SchemeGroupVersion.String(), "kind": fleet.KindWork,
		"metadata": map[string]any{"name": "probe", "namespace": "default"}, "spec": map[string]any{}}}
	await.Until(t, "the policy to deny a Work", func() bool {
		_, err := th.client.Resource(worksGVR).Namespace("default").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), denial)
	})
	if _, err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}

	b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: "app-pulled", Labels: map[string]string{fleet.PlacementTrackingLabel: stored.Name}},
		Spec: fleet.ResourceBindingSpec{State: fleet.BindingStateBound, TargetCluster: "pulled", ResourceSnapshotName: snap.Name,
			SchedulingPolicySnapshotName: stored.Name + "-0"}}
	if err := h.CreateBinding(ctx, b); err != nil {
		t.Fatal(err)
	}
	if b, err = h.GetBinding(ctx, hub.Key{Name: b.Name}); err != nil {
		t.Fatal(err)
	}
	b.Status.Conditions = append(b.Status.Conditions, metav1.Condition{Type: fleet.ResourceBindingRolloutStarted,
		Status: metav1.ConditionTrue, Reason: fleet.RolloutStartedReason, ObservedGeneration: b.Generation, LastTransitionTime: metav1.Now()})
	if err := h.UpdateBindingStatus(ctx, b); err != nil {
		t.Fatal(err)
	}

	synchronized := func() *metav1.Condition {
		t.Helper()
		got, err := h.GetBinding(ctx, hub.Key{Name: b.Name})
		if err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(got.Status.Conditions, fleet.ResourceBindingWorkSynchronized)
	}
	await.Until(t, "the hub to refuse the binding's works", func() bool {
		err := h.Commit(ctx)
		c := synchronized()
		return err != nil && c != nil && c.Status == metav1.ConditionFalse
	})
	c := synchronized()
	if c.Reason != fleet.SyncWorkFailedReason || !strings.HasPrefix(c.Message, "Failed to synchronize the work to the latest: ") ||
		!strings.Contains(c.Message, denial) || c.ObservedGeneration != b.Generation {
		t.Errorf("WorkSynchronized = %+v, want False %s at generation %d, KubeFleet's message with the hub's refusal %q",
			c, fleet.SyncWorkFailedReason, b.Generation, denial)
	}
	if works, err := h.ListWorks(ctx, "pulled", hub.Key{Name: b.Name}); err != nil || len(works) != 0 {
		t.Errorf("the Works on the hub: %d, %v; want none", len(works), err)
	}

	if err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, "frozen", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the works to be written once the policy is lifted", func() bool {
		_ = h.Commit(ctx)
		c := synchronized()
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == member.AllWorkSyncedReason
	})
	if works, err := h.ListWorks(ctx, "pulled", hub.Key{Name: b.Name}); err != nil || len(works) != 1 {
		t.Errorf("the Works on the hub: %d, %v; want one", len(works), err)
	}
}
