package v1beta1_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestEnvelopesAreReadAtV1beta1Only: KubeFleet serves its envelopes at
// v1beta1 alone, and both kinds share the Envelope Go type.
func TestEnvelopesAreReadAtV1beta1Only(t *testing.T) {
	for _, kind := range []string{fleet.KindClusterResourceEnvelope, fleet.KindResourceEnvelope} {
		if o, err := fleet.Scheme.New(schema.GroupVersionKind{Group: fleet.PlacementGroup, Version: "v1beta1", Kind: kind}); err != nil {
			t.Errorf("%s at v1beta1: %v", kind, err)
		} else if _, ok := o.(*fleet.Envelope); !ok {
			t.Errorf("%s at v1beta1 is a %T, want *Envelope", kind, o)
		}
		if _, err := fleet.Scheme.New(schema.GroupVersionKind{Group: fleet.PlacementGroup, Version: "v1", Kind: kind}); err == nil {
			t.Errorf("%s is read at v1; KubeFleet serves it at v1beta1 only", kind)
		}
		if k, ok := fleet.LookupKind(kind); !ok || !k.Workload || k.HubOwned {
			t.Errorf("%s: registry %+v, want a workload kind", kind, k)
		}
	}
}

// TestUnwrap: an envelope's manifests in the order of their keys, or
// KubeFleet's message (workgenerator's extractManifestsFromEnvelopeCR) for
// the first of the wrong scope.
func TestUnwrap(t *testing.T) {
	for _, tc := range []struct {
		name, envelope string
		want           []string
		wantErr        string
	}{
		{name: "cluster-scoped objects in a ClusterResourceEnvelope", envelope: `
kind: ClusterResourceEnvelope
apiVersion: placement.kubernetes-fleet.io/v1beta1
metadata: {name: example}
data:
  webhook.yaml: {apiVersion: admissionregistration.k8s.io/v1, kind: ValidatingWebhookConfiguration, metadata: {name: guard}}
  clusterrole.yaml: {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: pod-reader}}`,
			want: []string{"clusterrole.yaml ClusterRole pod-reader", "webhook.yaml ValidatingWebhookConfiguration guard"}},
		{name: "objects of its namespace in a ResourceEnvelope", envelope: `
kind: ResourceEnvelope
apiVersion: placement.kubernetes-fleet.io/v1beta1
metadata: {name: example, namespace: app}
data:
  quota.yaml: {apiVersion: v1, kind: ResourceQuota, metadata: {name: quota, namespace: app}}`,
			want: []string{"quota.yaml ResourceQuota quota"}},
		{name: "a namespaced object in a ClusterResourceEnvelope", envelope: `
kind: ClusterResourceEnvelope
apiVersion: placement.kubernetes-fleet.io/v1beta1
metadata: {name: example}
data:
  quota.yaml: {apiVersion: v1, kind: ResourceQuota, metadata: {name: quota, namespace: app}}`,
			wantErr: "a namespaced object quota.yaml (app/quota) has been wrapped in a cluster resource envelope example"},
		{name: "a cluster-scoped object in a ResourceEnvelope", envelope: `
kind: ResourceEnvelope
apiVersion: placement.kubernetes-fleet.io/v1beta1
metadata: {name: example, namespace: app}
data:
  clusterrole.yaml: {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: pod-reader}}`,
			wantErr: "a cluster scope object clusterrole.yaml (pod-reader) has been wrapped in a resource envelope app/example"},
		{name: "an object of another namespace in a ResourceEnvelope", envelope: `
kind: ResourceEnvelope
apiVersion: placement.kubernetes-fleet.io/v1beta1
metadata: {name: example, namespace: app}
data:
  cm.yaml: {apiVersion: v1, kind: ConfigMap, metadata: {name: config, namespace: other}}`,
			wantErr: "a namespaced object cm.yaml (other/config) in has been wrapped in a resource envelope from another namespace (app/example)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := object(t, tc.envelope)
			got, err := fleet.Unwrap(env)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, m := range got {
				names = append(names, m.Key+" "+m.Object.GetKind()+" "+m.Object.GetName())
			}
			if len(names) != len(tc.want) {
				t.Fatalf("unwrapped %v, want %v", names, tc.want)
			}
			for i := range names {
				if names[i] != tc.want[i] {
					t.Errorf("unwrapped %v, want %v", names, tc.want)
				}
			}
			if id := fleet.EnvelopeOf(env); id.Name != env.GetName() || id.Namespace != env.GetNamespace() || id.Type != env.GetKind() {
				t.Errorf("EnvelopeOf = %+v", id)
			}
		})
	}
}
