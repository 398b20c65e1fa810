package status

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/testing/golden"
)

func TestEncodeWritesKubectlStyleYAML(t *testing.T) {
	for name, obj := range map[string]runtime.Object{
		"encode/clusterstagedupdaterun.yaml":  waitingRun(""),
		"encode/approvalrequest.yaml":         approval("team-a"),
		"encode/clusterresourcesnapshot.yaml": snapshot("", 1, -1),
		"encode/clusterresourcebinding.yaml":  binding("", "member2"),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Encode(obj)
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, name, got)
		})
	}
}

func TestEncodeOrdersTopLevelLikeKubectl(t *testing.T) {
	got, err := Encode(waitingRun(""))
	if err != nil {
		t.Fatal(err)
	}
	var tops []string
	for _, line := range strings.Split(string(got), "\n") {
		if line != "" && line[0] != ' ' && line[0] != '-' {
			tops = append(tops, strings.SplitN(line, ":", 2)[0])
		}
	}
	if want := []string{"apiVersion", "kind", "metadata", "spec", "status"}; !reflect.DeepEqual(tops, want) {
		t.Errorf("top-level keys = %v, want %v", tops, want)
	}
}

func TestEncodeDropsNoise(t *testing.T) {
	a := approval("")
	a.CreationTimestamp = metav1.Time{}
	a.ResourceVersion = "42"
	got, err := Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, noise := range []string{"creationTimestamp", "status:", "resourceVersion", "null"} {
		if bytes.Contains(got, []byte(noise)) {
			t.Errorf("encoded approval contains %q:\n%s", noise, got)
		}
	}
}

func TestEncodeKeepsEmptyClusterList(t *testing.T) {
	// The seeds show `clusters: []` for an empty deletion stage.
	got, err := Encode(waitingRun(""))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, []byte("clusters: []")) {
		t.Errorf("empty deletion stage lost its clusters: []:\n%s", got)
	}
}

func TestEncodeFillsTypeMetaFromGoTypeAndScope(t *testing.T) {
	for _, obj := range allKinds() {
		want := kindFor(obj)
		obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{}) // as objects built in code come
		data, err := Encode(obj)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(data)
		if err != nil {
			t.Fatalf("%s: %v\n%s", want, err, data)
		}
		if got := back.GetObjectKind().GroupVersionKind().Kind; got != want {
			t.Errorf("kind = %q, want %q", got, want)
		}
	}
}

func TestEncodeIsStableAndRoundTrips(t *testing.T) {
	for _, obj := range allKinds() {
		first, err := Encode(obj)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := Encode(obj)
		if !bytes.Equal(first, again) {
			t.Fatalf("two encodings of %s differ", kindFor(obj))
		}
		back, err := Decode(first)
		if err != nil {
			t.Fatalf("%s: %v", kindFor(obj), err)
		}
		if reflect.TypeOf(back) != reflect.TypeOf(obj) {
			t.Fatalf("%s decoded as %T", kindFor(obj), back)
		}
		obj.GetObjectKind().SetGroupVersionKind(back.GetObjectKind().GroupVersionKind())
		if !equality.Semantic.DeepEqual(back, obj) {
			t.Errorf("%s did not survive the round trip:\n%s", kindFor(obj), first)
		}
		third, _ := Encode(back)
		if !bytes.Equal(first, third) {
			t.Errorf("%s re-encodes differently after decoding:\n%s\n---\n%s", kindFor(obj), first, third)
		}
	}
}

func TestDecodeChoosesGoTypeByKind(t *testing.T) {
	cases := map[string]runtime.Object{
		fleet.KindMemberCluster:                   &fleet.MemberCluster{},
		fleet.KindClusterResourcePlacement:        &fleet.Placement{},
		fleet.KindResourcePlacement:               &fleet.Placement{},
		fleet.KindClusterStagedUpdateStrategy:     &fleet.UpdateStrategy{},
		fleet.KindStagedUpdateStrategy:            &fleet.UpdateStrategy{},
		fleet.KindClusterStagedUpdateRun:          &fleet.UpdateRun{},
		fleet.KindStagedUpdateRun:                 &fleet.UpdateRun{},
		fleet.KindClusterApprovalRequest:          &fleet.ApprovalRequest{},
		fleet.KindApprovalRequest:                 &fleet.ApprovalRequest{},
		fleet.KindClusterResourceSnapshot:         &fleet.ResourceSnapshot{},
		fleet.KindResourceSnapshot:                &fleet.ResourceSnapshot{},
		fleet.KindClusterSchedulingPolicySnapshot: &fleet.PolicySnapshot{},
		fleet.KindSchedulingPolicySnapshot:        &fleet.PolicySnapshot{},
		fleet.KindClusterResourceBinding:          &fleet.Binding{},
		fleet.KindResourceBinding:                 &fleet.Binding{},
		fleet.KindClusterResourceOverrideSnapshot: &fleet.ClusterResourceOverrideSnapshot{},
		fleet.KindResourceOverrideSnapshot:        &fleet.ResourceOverrideSnapshot{},
	}
	if len(cases) != 17 {
		t.Fatalf("want all 17 kinds, have %d", len(cases))
	}
	for kind, want := range cases {
		apiVersion, ns := fleet.PlacementAPIVersion, "  namespace: team-a\n"
		if kind == fleet.KindMemberCluster {
			apiVersion = fleet.ClusterAPIVersion
		}
		if strings.HasPrefix(kind, "Cluster") || kind == fleet.KindMemberCluster {
			ns = ""
		}
		doc := "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata:\n  name: x\n" + ns
		got, err := Decode([]byte(doc))
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		if reflect.TypeOf(got) != reflect.TypeOf(want) {
			t.Errorf("%s decoded as %T, want %T", kind, got, want)
		}
	}
}

func TestDecodeRejectsWithFileName(t *testing.T) {
	const file = "status/runs/example-run.yaml"
	run := "apiVersion: placement.kubernetes-fleet.io/v1beta1\nkind: ClusterStagedUpdateRun\nmetadata:\n  name: example-run\n"
	cases := []struct {
		name, doc, want string
	}{
		{"unknown field", run + "spec:\n  placementName: p\n  stagedRolloutStrategyName: s\n  stat: Run\n", `unknown field "spec.stat"`},
		{"duplicate field", run + "spec:\n  placementName: p\n  placementName: q\n", `key "placementName" already set`},
		{"unknown kind", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", `kind "ConfigMap" is not a fleet object`},
		{"missing kind", "metadata:\n  name: x\n", "missing kind"},
		{"wrong apiVersion", strings.Replace(run, "placement.kubernetes-fleet.io/v1beta1", "placement.kubernetes-fleet.io/v1", 1), `apiVersion "placement.kubernetes-fleet.io/v1" does not serve kind ClusterStagedUpdateRun`},
		{"cluster kind with namespace", run + "  namespace: team-a\n", `cluster-scoped but metadata.namespace is "team-a"`},
		{"namespaced kind without namespace", strings.Replace(run, "ClusterStagedUpdateRun", "StagedUpdateRun", 1), "namespaced but metadata.namespace is empty"},
		{"two documents", run + "---\n" + run, "more than one YAML document"},
		{"empty", "\n", "empty document"},
		{"not yaml", "kind: [", "error converting YAML"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeFile(file, []byte(tc.doc))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), file+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %q, want prefix %q and %q", err, file, tc.want)
			}
		})
	}
}

func TestDecodeAcceptsLeadingDocumentMarker(t *testing.T) {
	doc := "---\napiVersion: cluster.kubernetes-fleet.io/v1beta1\nkind: MemberCluster\nmetadata:\n  name: member1\n"
	if _, err := Decode([]byte(doc)); err != nil {
		t.Fatal(err)
	}
}

func TestToYAMLWritesWhatSigsYAMLWrites(t *testing.T) {
	tricky := snapshot("", 2, -1)
	tricky.Spec.SelectedResources = append(tricky.Spec.SelectedResources, runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap",
		"metadata":{"name":"numbers","namespace":"n","labels":{"a":"1","b":"yes","c":"null","d":"1e3"}},
		"data":{"x":"é\u00e9 \"q\" \n line","empty":""},
		"spec":{"ints":[0,1,-7,9223372036854775807,-9223372036854775808,18446744073709551615,18446744073709551616],
		"floats":[1.0,1.5,1e3,0.1,1e-7,-2.5e10,1e300,123456789012345678901234567890],
		"mixed":[true,false,null,"",[],{},[null],{"k":null}],"nested":{"b":{"a":[{"z":1,"y":[2]}]}}}}`)})
	objs := append(allKinds(), tricky, bigRun("", 2, 60, 3), bigPlacement("team-a", 70))
	for _, obj := range withKind(objs) {
		content, err := cleanMap(obj)
		if err != nil {
			t.Fatal(err)
		}
		want, err := yaml.Marshal(content)
		if err != nil {
			t.Fatal(err)
		}
		got, err := toYAML(content)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s:\ngot\n%s\nwant (sigs.k8s.io/yaml)\n%s", describeObject(obj), got, want)
		}
	}
}
