package member

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

func obj(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestPatchDetailsNameEachFieldWithBothValues(t *testing.T) {
	hub := `apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: app, labels: {gitfleet.io/placement: p, team: a}}
data: {key: v1, gone: x}`
	for _, tt := range []struct {
		name, member string
		want         []fleet.PatchDetail
	}{
		{name: "equal but for metadata the server sets and reserved labels", member: `apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: app, uid: u, resourceVersion: "7", creationTimestamp: "2026-01-01T00:00:00Z",
  labels: {team: a, kubernetes.io/x: z}, managedFields: [{manager: m}]}
data: {key: v1, gone: x}`},
		{name: "a changed, an added and a removed field", member: `apiVersion: v1
kind: ConfigMap
metadata: {name: cm, namespace: app, labels: {team: b}}
data: {key: edited, extra: "3"}`, want: []fleet.PatchDetail{
			{Path: "/data/extra", ValueInMember: "3"},
			{Path: "/data/gone", ValueInHub: "x"},
			{Path: "/data/key", ValueInMember: "edited", ValueInHub: "v1"},
			{Path: "/metadata/labels/team", ValueInMember: "b", ValueInHub: "a"},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PatchDetails(obj(t, hub), obj(t, tt.member))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PatchDetails = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPatchDetailsRedactASecretsData(t *testing.T) {
	got, err := PatchDetails(obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {k: aGk=}"),
		obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {k: aG8=}"))
	if err != nil {
		t.Fatal(err)
	}
	want := []fleet.PatchDetail{{Path: "/data/k", ValueInMember: "(redacted for security reasons)", ValueInHub: "(redacted for security reasons)"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PatchDetails = %+v, want %+v", got, want)
	}
}
