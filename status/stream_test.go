package status

import (
	"bytes"
	"testing"
)

// The streaming writer prints what the tree encoder, held to
// sigs.k8s.io/yaml, prints.
func TestEncodeToWritesWhatTheTreeEncoderWrites(t *testing.T) {
	unicode := waitingRun("")
	unicode.Annotations = map[string]string{"note": "déploiement\nen deux lignes"}
	objs := append(allKinds(), unicode)
	// As the hub hands them out: kind set, a resourceVersion.
	for _, o := range allKinds() {
		if err := fillTypeMeta(o); err != nil {
			t.Fatal(err)
		}
		o.(interface{ SetResourceVersion(string) }).SetResourceVersion("5")
		objs = append(objs, o)
	}
	for _, obj := range objs {
		want, err := encodeTree(obj)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := EncodeTo(&got, obj); err != nil {
			t.Fatal(err)
		}
		if got.String() != string(want) {
			t.Errorf("%s: EncodeTo differs from encodeTree:\n--- got\n%s\n--- want\n%s", describeObject(obj), got.String(), want)
		}
	}
}

func TestEncodeToLeavesTheObjectAlone(t *testing.T) {
	run := waitingRun("")
	run.ResourceVersion = "7"
	if err := EncodeTo(&bytes.Buffer{}, run); err != nil {
		t.Fatal(err)
	}
	if run.Kind != "" || run.ResourceVersion != "7" {
		t.Fatalf("EncodeTo changed its argument: kind %q, resourceVersion %q", run.Kind, run.ResourceVersion)
	}
}

// Part files go through the streaming writer too, and print what the tree
// path prints.
func TestMarshalCleanWritesWhatTheTreePathWrites(t *testing.T) {
	for _, obj := range append(allKinds(), bigRun("", 0, 12, 3)) {
		content, err := cleanMap(obj)
		if err != nil {
			t.Fatal(err)
		}
		want, err := toYAML(content)
		if err != nil {
			t.Fatal(err)
		}
		got, err := marshalClean(obj)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s: marshalClean differs from the tree path:\n--- got\n%s\n--- want\n%s", describeObject(obj), got, want)
		}
	}
}
