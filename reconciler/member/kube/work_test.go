package kube

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
)

func testWork(t *testing.T, gen int64, docs ...string) *fleet.Work {
	t.Helper()
	w := &fleet.Work{ObjectMeta: metav1.ObjectMeta{Name: "web-work", Namespace: "fleet-member-member1", Generation: gen,
		Labels: map[string]string{fleet.ParentBindingLabel: "web-member1", fleet.PlacementTrackingLabel: "web"}}}
	for _, d := range docs {
		data, err := yaml.YAMLToJSON([]byte(d))
		if err != nil {
			t.Fatal(err)
		}
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, fleet.Manifest{RawExtension: runtime.RawExtension{Raw: data}})
	}
	return w
}

// startWorkApplier starts a member cluster and the WorkApplier of its
// admin, as an agent on that member applies Works.
func startWorkApplier(t *testing.T) (*kubetest.Cluster, *WorkApplier) {
	t.Helper()
	c := kubetest.Start(t, "member1")[0]
	a, err := NewWorkApplier(c.AdminConfig(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return c, a
}

// TestAWorkIsAppliedReportedAndPrunedOnARealMember: the WorkApplier (what
// an agent on a member applies Works with) puts a Work's manifests on a
// real API server, reports KubeFleet's Applied and Available per manifest
// and for the Work, prunes what the Work no longer holds, and removes
// what it applied.
func TestAWorkIsAppliedReportedAndPrunedOnARealMember(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	c, a := startWorkApplier(t)
	ctx := await.Context(t)
	ns := "{apiVersion: v1, kind: Namespace, metadata: {name: web}}"
	cm := "{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: web}, data: {level: info}}"
	st, err := a.Apply(ctx, testWork(t, 1, ns, cm), nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{fleet.WorkConditionTypeApplied, fleet.WorkConditionTypeAvailable} {
		if c := meta.FindStatusCondition(st.Conditions, typ); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != 1 {
			t.Errorf("work %s = %+v, want True at generation 1", typ, c)
		}
	}
	if len(st.ManifestConditions) != 2 || st.ManifestConditions[1].Identifier.Name != "settings" || st.ManifestConditions[1].Identifier.Ordinal != 1 {
		t.Fatalf("manifest conditions = %+v, want one per manifest in order", st.ManifestConditions)
	}
	for _, mc := range st.ManifestConditions {
		if c := meta.FindStatusCondition(mc.Conditions, fleet.WorkConditionTypeApplied); c == nil || c.Reason != ManifestAppliedReason {
			t.Errorf("%s: Applied = %+v, want %s", mc.Identifier.Name, c, ManifestAppliedReason)
		}
		// KubeFleet's manifest conditions observe the object's generation
		// on the member, not the Work's.
		id := mc.Identifier
		live := c.Get(id.Version, id.Kind, id.Namespace, id.Name)
		for _, cond := range mc.Conditions {
			if live == nil || cond.ObservedGeneration != live.GetGeneration() {
				t.Errorf("%s: %s observes generation %d, want the member object's", id.Name, cond.Type, cond.ObservedGeneration)
			}
		}
	}
	if c.Get("v1", "ConfigMap", "web", "settings") == nil {
		t.Fatal("the member lacks the work's ConfigMap")
	}

	// The Work no longer holds the ConfigMap: it is pruned.
	if _, err := a.Apply(ctx, testWork(t, 2, ns), nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	if c.Get("v1", "ConfigMap", "web", "settings") != nil {
		t.Error("the ConfigMap the work no longer holds is still on the member")
	}

	// A manifest the member refuses is Applied=False with its message.
	bad := "{apiVersion: v1, kind: ConfigMap, metadata: {name: Bad_Name, namespace: web}}"
	st, err = a.Apply(ctx, testWork(t, 3, ns, bad), nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(st.Conditions, fleet.WorkConditionTypeApplied); c == nil || c.Status != metav1.ConditionFalse ||
		c.Reason != WorkNotAllManifestsAppliedReason || c.Message != "Failed to apply all manifests (1 of 2 manifests are applied)" {
		t.Errorf("work Applied = %+v, want False/%s, the namespace applied", c, WorkNotAllManifestsAppliedReason)
	}
	if c := meta.FindStatusCondition(st.ManifestConditions[0].Conditions, fleet.WorkConditionTypeApplied); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("the namespace's Applied = %+v, want True (applied before the refused manifest)", c)
	}
	if c := meta.FindStatusCondition(st.ManifestConditions[1].Conditions, fleet.WorkConditionTypeApplied); c == nil ||
		c.Reason != "ManifestApplyFailed" || !strings.HasPrefix(c.Message, "Failed to apply the manifest (error: ") ||
		!strings.Contains(c.Message, `"Bad_Name": a lowercase RFC 1123 subdomain`) {
		t.Errorf("the refused manifest's Applied = %+v, want ManifestApplyFailed with the API server's message", c)
	}

	if err := a.Remove(ctx, testWork(t, 3, ns), nil); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the namespace to go", func() bool {
		n := c.Get("v1", "Namespace", "", "web")
		return n == nil || n.GetDeletionTimestamp() != nil
	})
}
