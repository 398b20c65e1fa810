package embedded_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/member"
)

// Envelopes as KubeFleet's examples/envelopes write them: a quota and a
// webhook configuration that must not act on the hub.
const (
	envNamespace = `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"test-namespace"}}`
	envQuota     = `"quota.yaml":{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"quota","namespace":"test-namespace"},"spec":{"hard":{"pods":"10"}}}`
	envCM        = `"cm.yaml":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"test-cm","namespace":"test-namespace"},"data":{"key":"value1"}}`
	envDeploy    = `"deploy.yaml":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"ingress","namespace":"test-namespace"}}`
	envWebhook   = `{"apiVersion":"placement.kubernetes-fleet.io/v1beta1","kind":"ClusterResourceEnvelope","metadata":{"name":"example"},"data":{"webhook.yaml":{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"guard"},"webhooks":[]}}}`
)

func resourceEnvelope(entries ...string) string {
	data := ""
	for i, e := range entries {
		if i > 0 {
			data += ","
		}
		data += e
	}
	return `{"apiVersion":"placement.kubernetes-fleet.io/v1beta1","kind":"ResourceEnvelope","metadata":{"name":"env","namespace":"test-namespace"},"data":{` + data + `}}`
}

// placedNames lists what cluster holds as "Kind ns/name", sorted.
func (f *fixture) placedNames(cluster string) []string {
	f.t.Helper()
	var out []string
	for _, p := range f.placed(cluster) {
		for _, r := range p.Resources {
			out = append(out, r.GetKind()+" "+fleet.EnvelopeRef(r.GetNamespace(), r.GetName()))
		}
	}
	sort.Strings(out)
	return out
}

// TestAnEnvelopeIsDeliveredAsWhatItWraps: a member receives the manifests
// of the envelopes its snapshot holds, never the envelopes; a manifest
// dropped from an envelope, and the envelope's manifests once the envelope
// leaves the snapshot, are pruned.
func TestAnEnvelopeIsDeliveredAsWhatItWraps(t *testing.T) {
	f := newFixture(t, simulated("member1"))
	f.snapshotOf(1, envNamespace, resourceEnvelope(envQuota, envCM), envWebhook)
	f.snapshotOf(2, envNamespace, resourceEnvelope(envCM), envWebhook)
	f.snapshotOf(3, envNamespace)
	for _, step := range []struct {
		index int
		want  []string
	}{
		{1, []string{"ConfigMap test-namespace/test-cm", "Namespace test-namespace", "ResourceQuota test-namespace/quota", "ValidatingWebhookConfiguration guard"}},
		{2, []string{"ConfigMap test-namespace/test-cm", "Namespace test-namespace", "ValidatingWebhookConfiguration guard"}},
		{3, []string{"Namespace test-namespace"}},
	} {
		f.bind("member1", step.index)
		must(t, f.hub.Commit(f.ctx))
		wantCond(t, f.binding("member1"), fleet.ResourceBindingAvailable, metav1.ConditionTrue, member.AllWorkAvailableReason)
		if got := f.placedNames("member1"); fmt.Sprint(got) != fmt.Sprint(step.want) {
			t.Errorf("snapshot %d: member1 holds %v, want %v", step.index, got, step.want)
		}
	}
}

// TestFailedPlacementsNameTheEnvelope: a wrapped manifest that does not
// become available is listed with its envelope, as KubeFleet lists the
// manifests of an envelope's Work.
func TestFailedPlacementsNameTheEnvelope(t *testing.T) {
	f := newFixture(t, simulated("member1", fleet.SimUnavailableAnnotation, "InvalidImageName"))
	f.snapshotOf(1, envNamespace, resourceEnvelope(envDeploy, envCM))
	f.bind("member1", 1)
	must(t, f.hub.Commit(f.ctx))
	f.clk.Advance(time.Hour)
	b := f.binding("member1")
	wantCond(t, b, fleet.ResourceBindingAvailable, metav1.ConditionFalse, member.WorkNotAvailableReason)
	if len(b.Status.FailedPlacements) != 1 {
		t.Fatalf("failed placements %+v, want the Deployment", b.Status.FailedPlacements)
	}
	got := b.Status.FailedPlacements[0].ResourceIdentifier
	want := fleet.ResourceIdentifier{Group: "apps", Version: "v1", Kind: "Deployment", Name: "ingress", Namespace: "test-namespace",
		Envelope: &fleet.EnvelopeIdentifier{Name: "env", Namespace: "test-namespace", Type: fleet.ResourceEnvelopeType}}
	if got.Envelope == nil || *got.Envelope != *want.Envelope || got.Name != want.Name || got.Kind != want.Kind || got.Group != want.Group {
		t.Errorf("failed placement %+v (envelope %+v), want %+v (envelope %+v)", got, got.Envelope, want, want.Envelope)
	}
}

// TestOverridesApplyInsideAnEnvelope: an override that selects a wrapped
// manifest changes what the member receives; one that fails names the
// envelope in KubeFleet's words and delivers nothing.
func TestOverridesApplyInsideAnEnvelope(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		wantErr    string
	}{
		{name: "a patch of a wrapped ConfigMap", path: "/data/key"},
		{name: "a patch that fails", path: "/data/nothing",
			wantErr: `Failed to apply the override rules on the resources: failed to apply overrides to ConfigMap "test-cm" in namespace "test-namespace" from envelope test-namespace/env: ResourceOverrideSnapshot "cm-0" failed to apply on ConfigMap "test-cm" in namespace "test-namespace": replace operation does not apply: doc is missing key: /data/nothing: missing value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, simulated("member1"))
			f.snapshotOf(1, envNamespace, resourceEnvelope(envCM))
			must(t, f.hub.PutResourceOverrideSnapshot(f.ctx, &fleet.ResourceOverrideSnapshot{
				ObjectMeta: metav1.ObjectMeta{Name: "cm-0", Namespace: "test-namespace"},
				Spec: fleet.ResourceOverrideSnapshotSpec{OverrideSpec: fleet.ResourceOverrideSpec{
					ResourceSelectors: []fleet.ResourceSelector{{Version: "v1", Kind: "ConfigMap", Name: "test-cm"}},
					Policy: &fleet.OverridePolicy{OverrideRules: []fleet.OverrideRule{{ClusterSelector: &fleet.ClusterSelector{},
						JSONPatchOverrides: []fleet.JSONPatchOverride{{Operator: fleet.JSONPatchOverrideOpReplace, Path: tc.path,
							Value: apiextensionsv1.JSON{Raw: []byte(`"overridden"`)}}}}}},
				}},
			}))
			b := f.binding("member1")
			b.Spec.State = fleet.BindingStateBound
			b.Spec.ResourceSnapshotName = placementName + "-1-snapshot"
			b.Spec.ResourceOverrideSnapshots = []fleet.NamespacedName{{Namespace: "test-namespace", Name: "cm-0"}}
			f.start(b)
			must(t, f.hub.Commit(f.ctx))
			b = f.binding("member1")
			if tc.wantErr != "" {
				wantCond(t, b, fleet.ResourceBindingOverridden, metav1.ConditionFalse, "OverriddenFailed")
				if got := cond(b, fleet.ResourceBindingOverridden).Message; got != tc.wantErr {
					t.Errorf("message %q\nwant    %q", got, tc.wantErr)
				}
				if got := f.placed("member1"); len(got) != 0 {
					t.Errorf("member1 holds %+v, want nothing", got)
				}
				return
			}
			wantCond(t, b, fleet.ResourceBindingOverridden, metav1.ConditionTrue, "OverriddenSucceeded")
			var data any
			for _, p := range f.placed("member1") {
				for _, r := range p.Resources {
					if r.GetKind() == "ConfigMap" {
						data = r.Object["data"]
					}
				}
			}
			if fmt.Sprint(data) != "map[key:overridden]" {
				t.Errorf("member1's ConfigMap data = %v, want the override's", data)
			}
		})
	}
}

// TestAnEnvelopeOfTheWrongScopeIsNotSynchronized: render refuses such an
// envelope in Git; one in a snapshot made elsewhere fails the work sync
// with KubeFleet's message and delivers nothing.
func TestAnEnvelopeOfTheWrongScopeIsNotSynchronized(t *testing.T) {
	f := newFixture(t, simulated("member1"))
	f.snapshotOf(1, envNamespace,
		`{"apiVersion":"placement.kubernetes-fleet.io/v1beta1","kind":"ClusterResourceEnvelope","metadata":{"name":"example"},"data":{`+envQuota+`}}`)
	f.bind("member1", 1)
	must(t, f.hub.Commit(f.ctx))
	b := f.binding("member1")
	wantCond(t, b, fleet.ResourceBindingWorkSynchronized, metav1.ConditionFalse, fleet.SyncWorkFailedReason)
	want := "Failed to synchronize the work to the latest: a namespaced object quota.yaml (test-namespace/quota) has been wrapped in a cluster resource envelope example"
	if got := cond(b, fleet.ResourceBindingWorkSynchronized).Message; got != want {
		t.Errorf("message %q\nwant    %q", got, want)
	}
	if got := f.placed("member1"); len(got) != 0 {
		t.Errorf("member1 holds %+v, want nothing", got)
	}
}
