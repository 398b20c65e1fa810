package agent_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/condmsg"
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
// (README, deliberate differences). A refusal whose text is over 32 KiB
// (the API server echoes 40 long data keys) is capped (condmsg) on the
// Work and the binding, so both statuses are written: the binding's, on
// the hub's API server, for both members and every row.
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
	huge := manifest(t, "v1", "ConfigMap", "long", "huge", nil)
	hugeData := map[string]any{}
	for i := range 40 { // apply's YAML takes keys of up to 1,024 characters
		// The keys differ at their end: the API server lists them in map
		// order, and the cut, within the first, reads the same either way.
		hugeData[fmt.Sprintf("%s%02d", strings.Repeat("a", 1000), i)] = "a key over 253 characters"
	}
	huge["data"] = hugeData
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
		// capped: the start of the failed placement's message, which the
		// cap cuts.
		capped string
		// failedReason and failedMessage: the first failed placement's.
		failedReason, failedMessage string
	}{
		{"refused", []map[string]any{manifest(t, "v1", "Namespace", "", "app", nil), bad},
			fleet.ResourceBindingApplied, metav1.ConditionFalse, member.WorkNotAppliedReason, "Work object place-refused-work has failed to apply", 1, "", "", member.ManifestApplyFailedReason, ""},
		// A namespace of its own: the refused row's binding is retried
		// all along, applying its namespace app again, which another
		// placement may not take over (the taken row).
		{"applied", []map[string]any{manifest(t, "v1", "Namespace", "", "good", nil), manifest(t, "v1", "ConfigMap", "good", "good", map[string]string{"k": "v"})},
			fleet.ResourceBindingAvailable, metav1.ConditionTrue, member.AllWorkAvailableReason, member.AllWorkAvailableMessage, 0, "", "", "", ""},
		// The applied row's ConfigMap, placed again by another placement:
		// not taken over, and said so as KubeFleet's work applier says it.
		{"taken", []map[string]any{manifest(t, "v1", "ConfigMap", "good", "good", map[string]string{"k": "v"})},
			fleet.ResourceBindingApplied, metav1.ConditionFalse, member.WorkNotAppliedReason, "Work object place-taken-work has failed to apply", 1, "", "",
			member.FailedToTakeOverReason, "Failed to apply the manifest (error: failed to take over a pre-existing object: " +
				"the object is already owned by another Fleet AppliedWork object)"},
		{"crd", []map[string]any{crd("gadgets", "Widget")},
			fleet.ResourceBindingApplied, metav1.ConditionFalse, member.WorkNotAppliedReason,
			"Work object place-crd-work has failed to apply: " + neverEstablished, 0, neverEstablished, "", "", ""},
		// The API server's refusal quotes each of 40 data keys of 1,002
		// characters twice, 80 KiB (a Work's manifests' metadata, where a
		// label value would be echoed, are validated on the hub).
		{"long", []map[string]any{manifest(t, "v1", "Namespace", "", "long", nil), huge},
			fleet.ResourceBindingApplied, metav1.ConditionFalse, member.WorkNotAppliedReason, "Work object place-long-work has failed to apply", 1, "",
			`Failed to apply the manifest (error: ConfigMap/long/huge apply failed: ConfigMap "huge" is invalid: [data[`, member.ManifestApplyFailedReason, ""},
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
			} else if tc.failures > 0 {
				if c := pulled.p.Failed[0].Condition; c.Reason != tc.failedReason || (tc.failedMessage != "" && c.Message != tc.failedMessage) {
					t.Errorf("pulled: failed placement %+v, want %s: %q", c, tc.failedReason, tc.failedMessage)
				}
			}
			if got, want := describeReport(timeless(pushedRep)), describeReport(timeless(pulled)); got != want {
				t.Errorf("pushed and pulled differ:\npushed: %.4000s\npulled: %.4000s", got, want)
			}
			for _, f := range pulled.p.Failed {
				msg := f.Condition.Message
				if len(msg) > condmsg.Max || tc.capped != "" && (!strings.HasPrefix(msg, tc.capped) || !strings.HasSuffix(msg, " more characters)")) {
					t.Errorf("failed placement's message (%d bytes) = %.300q…%q, want at most %d bytes, starting %q and cut",
						len(msg), msg, msg[max(0, len(msg)-40):], condmsg.Max, tc.capped)
				}
			}
			for name, rep := range map[string]bindingReport{"pushed": pushedRep, "pulled": pulled} {
				if err := writeBinding(t, f.hub, b, b.Name+"-"+name, rep); err != nil {
					t.Errorf("the %s binding's status is not written: %.500v", name, err)
				}
			}
		})
	}
}

// writeBinding writes b, named name, with rep as its status, as a
// ClusterResourceBinding on c.
func writeBinding(t *testing.T, c *kubetest.Cluster, b *fleet.Binding, name string, rep bindingReport) error {
	w := b.DeepCopy()
	w.Name = name
	w.Spec.State = fleet.BindingStateBound
	w.Spec.ClusterDecision = fleet.ClusterDecision{ClusterName: b.Spec.TargetCluster, Selected: true, Reason: "picked by the test"}
	w.Status = fleet.ResourceBindingStatus{Conditions: slices.Clone(rep.conds), FailedPlacements: slices.Clone(rep.p.Failed),
		DriftedPlacements: rep.p.Drifted, DiffedPlacements: rep.p.Diffed}
	for i := range w.Status.Conditions {
		w.Status.Conditions[i].LastTransitionTime = metav1.Now()
	}
	for i := range w.Status.FailedPlacements {
		w.Status.FailedPlacements[i].Condition.LastTransitionTime = metav1.Now()
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(fleet.SchemeGroupVersion.String())
	u.SetKind("ClusterResourceBinding")
	status := u.Object["status"]
	if err := c.Client().Create(await.Context(t), u); err != nil {
		t.Fatal(err)
	}
	u.Object["status"] = status
	return c.Client().Status().Update(await.Context(t), u)
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
