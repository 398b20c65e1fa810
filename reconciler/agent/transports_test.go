package agent_test

import (
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/await"
	"github.com/gitfleet/gitfleet/internal/testing/kubetest"
	"github.com/gitfleet/gitfleet/reconciler/delivery"
	"github.com/gitfleet/gitfleet/reconciler/hub"
	"github.com/gitfleet/gitfleet/reconciler/member"
	"github.com/gitfleet/gitfleet/reconciler/member/kube"
)

// lastReport keeps the kubeconfig driver's last report on each binding.
type lastReport struct {
	mu   sync.Mutex
	last map[hub.Key]bindingReport
}

type bindingReport struct {
	conds []metav1.Condition
	p     member.Placements
}

func (r *lastReport) ReportBindingStatus(key hub.Key, _ int64, conds []metav1.Condition, p member.Placements) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last[key] = bindingReport{conds: conds, p: p}
	return nil
}

func (r *lastReport) get(key hub.Key) bindingReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[key]
}

// timeless is rep without the times MergeReport stamps when it is written.
func timeless(rep bindingReport) bindingReport {
	out := bindingReport{p: member.Placements{Drifted: rep.p.Drifted, Diffed: rep.p.Diffed}}
	for _, c := range rep.conds {
		c.LastTransitionTime = metav1.Time{}
		out.conds = append(out.conds, c)
	}
	for _, f := range rep.p.Failed {
		f.Condition.LastTransitionTime = metav1.Time{}
		out.p.Failed = append(out.p.Failed, f)
	}
	return out
}

// TestAMemberReadsAlikePushedAndPulled: the same snapshot, delivered to a
// member that pulls its Works (the agent) and to one gitfleet pushes them
// to (the kubeconfig driver, here to the hub's API server, a real one of
// the same version), gives its binding the same conditions and failed
// placements, a manifest the API server refuses included: one delivery
// path, KubeFleet's words. A Work whose apply fails as a whole (its CRD
// never becomes established: another CRD of the group has its kind)
// says why on its own Applied, and the binding adds that cause to
// KubeFleet's message, on the member that pulls and the one pushed to
// (README, deliberate differences).
func TestAMemberReadsAlikePushedAndPulled(t *testing.T) {
	f := start(t)
	await.Until(t, "the member to be joined", func() bool { return joined(f.memberCluster(t)) == metav1.ConditionTrue })
	reports := &lastReport{last: map[hub.Key]bindingReport{}}
	pusher, err := kube.Load(kube.Options{Kubeconfig: kubetest.Kubeconfig(t, []*kubetest.Cluster{f.hub}, nil),
		PollInterval: 100 * time.Millisecond, RetryBase: 50 * time.Millisecond, RetryMax: time.Second, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	pusher.Start(await.Context(t), reports)
	m := f.memberCluster(t)

	bad := manifest(t, "v1", "ConfigMap", "app", "bad", nil)
	bad["data"] = map[string]any{"k": map[string]any{"not": "a string"}}
	// Both members already serve Widgets, so the Work's CRD of the same
	// kind is refused its names and never becomes established.
	for _, c := range []*kubetest.Cluster{f.hub, f.member} {
		widgets := &unstructured.Unstructured{Object: crd("widgets", "Widget")}
		if err := c.Client().Create(await.Context(t), widgets); err != nil {
			t.Fatal(err)
		}
		await.Until(t, "the Widget CRD to be established", func() bool {
			got := c.Get("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com")
			if got == nil {
				return false
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, cond := range conds {
				if cond, ok := cond.(map[string]any); ok && cond["type"] == "Established" && cond["status"] == "True" {
					return true
				}
			}
			return false
		})
	}
	const neverEstablished = "waiting for the CRDs and namespaces to be ready: failed early due to stalled resources: " +
		"[CustomResourceDefinition/gadgets.example.com status: 'Failed']"
	for _, tc := range []struct {
		name      string
		manifests []map[string]any
		// settled: the condition the binding settles with.
		settled  string
		status   metav1.ConditionStatus
		reason   string
		message  string
		failures int
		// cause: the pulled Work's Applied message when its apply failed
		// as a whole (reason WorkAppliedFailed).
		cause string
	}{
		{"refused", []map[string]any{manifest(t, "v1", "Namespace", "", "app", nil), bad},
			fleet.ResourceBindingApplied, metav1.ConditionFalse, member.WorkNotAppliedReason, "Work object place-refused-work has failed to apply", 1, ""},
		// A namespace of its own: the refused row's binding is retried
		// all along, applying its namespace app again, and an object two
		// placements apply carries the placement label of the last.
		{"applied", []map[string]any{manifest(t, "v1", "Namespace", "", "good", nil), manifest(t, "v1", "ConfigMap", "good", "good", map[string]string{"k": "v"})},
			fleet.ResourceBindingAvailable, metav1.ConditionTrue, member.AllWorkAvailableReason, member.AllWorkAvailableMessage, 0, ""},
		{"crd", []map[string]any{crd("gadgets", "Widget")},
			fleet.ResourceBindingApplied, metav1.ConditionFalse, member.WorkNotAppliedReason,
			"Work object place-crd-work has failed to apply: " + neverEstablished, 0, neverEstablished},
	} {
		t.Run(tc.name, func(t *testing.T) {
			placement := "place-" + tc.name
			b := &fleet.Binding{ObjectMeta: metav1.ObjectMeta{Name: placement + "-" + memberName, Generation: 1,
				Labels: map[string]string{fleet.PlacementTrackingLabel: placement}}}
			b.Spec.TargetCluster, b.Spec.ResourceSnapshotName = memberName, placement+"-0-snapshot"
			s := &fleet.ResourceSnapshot{ObjectMeta: metav1.ObjectMeta{Name: b.Spec.ResourceSnapshotName,
				Labels: map[string]string{fleet.PlacementTrackingLabel: placement, fleet.ResourceIndexLabel: "0"}}}
			for _, m := range tc.manifests {
				data, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				s.Spec.SelectedResources = append(s.Spec.SelectedResources, runtime.RawExtension{Raw: data})
			}
			src := delivery.Sources{Snapshots: []*fleet.ResourceSnapshot{s}}
			settled := func(conds []metav1.Condition) bool {
				c := meta.FindStatusCondition(conds, tc.settled)
				return c != nil && c.Status == tc.status && c.Reason == tc.reason && c.Message == tc.message
			}

			works, failed := delivery.Works(b, m, src)
			if failed != nil {
				t.Fatalf("works: %+v", failed)
			}
			var pulled bindingReport
			for _, w := range works {
				if err := f.admin.Create(await.Context(t), w); err != nil {
					t.Fatal(err)
				}
			}
			await.Until(t, "the pulled binding to settle", func() bool {
				stored := make([]*fleet.Work, len(works))
				for i, w := range works {
					stored[i] = f.work(t, w.Name)
				}
				pulled.conds, pulled.p = delivery.Status(b, stored)
				return settled(pulled.conds)
			})

			if tc.cause != "" {
				c := meta.FindStatusCondition(f.work(t, works[0].Name).Status.Conditions, fleet.WorkConditionTypeApplied)
				if c == nil || c.Status != metav1.ConditionFalse || c.Reason != delivery.WorkAppliedFailedReason || c.Message != tc.cause {
					t.Errorf("pulled Work's Applied = %+v, want False, %s, %q", c, delivery.WorkAppliedFailedReason, tc.cause)
				}
			}

			pushWorks, failed := delivery.PushWorks(b, m, src)
			if failed != nil {
				t.Fatalf("push works: %+v", failed)
			}
			key := hub.Key{Name: b.Name}
			if err := pusher.Driver("hub").Deliver(await.Context(t), member.Delivery{Binding: b, Member: m, Works: pushWorks}); err != nil {
				t.Fatal(err)
			}
			await.Until(t, "the pushed binding to settle", func() bool { return settled(reports.get(key).conds) })
			pushedRep := reports.get(key)

			if len(pulled.p.Failed) != tc.failures {
				t.Errorf("pulled: %d failed placements, want %d: %+v", len(pulled.p.Failed), tc.failures, pulled.p.Failed)
			}
			if got, want := describeReport(timeless(pushedRep)), describeReport(timeless(pulled)); got != want {
				t.Errorf("pushed and pulled differ:\npushed: %s\npulled: %s", got, want)
			}
		})
	}
}

func describeReport(r bindingReport) string {
	data, err := json.MarshalIndent(struct {
		Conds      []metav1.Condition
		Placements member.Placements
	}{r.conds, r.p}, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(data)
}

// crd is a CustomResourceDefinition of example.com: plural, its kind kind.
func crd(plural, kind string) map[string]any {
	return map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + ".example.com"},
		"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": plural, "kind": kind},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}
}
