package status

import (
	"bytes"
	"testing"
)

func TestEncodeToWritesWhatEncodeReturns(t *testing.T) {
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
		want, err := Encode(obj)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := EncodeTo(&got, obj); err != nil {
			t.Fatal(err)
		}
		if got.String() != string(want) {
			t.Errorf("%s: EncodeTo differs from Encode:\n--- got\n%s\n--- want\n%s", describeObject(obj), got.String(), want)
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
