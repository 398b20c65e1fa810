package status

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// decodeLong is Decode the long way, through go-yaml.
func decodeLong(t *testing.T, data []byte) runtime.Object {
	t.Helper()
	info, _ := fleet.LookupKind(kindOfFile(t, data))
	long := info.New()
	if err := strictUnmarshal(data, long); err != nil {
		t.Fatal(err)
	}
	return long
}

func kindOfFile(t *testing.T, data []byte) string {
	t.Helper()
	for _, line := range strings.Split(string(data), "\n") {
		if k, ok := strings.CutPrefix(line, "kind: "); ok {
			return k
		}
	}
	t.Fatalf("no kind in\n%s", data)
	return ""
}

// The store reads the files it wrote without go-yaml, and gets what go-yaml
// would give: every kind, and the parts of split objects.
func TestDecodeReadsItsOwnFilesAsGoYAMLDoes(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	s, _ := newStore(r)
	objs := withKind(append(allKinds(), bigRun("", 3, 12, 40), bigPlacement("team-a", 61)))
	for _, o := range objs {
		s.Put(refOfObj(o), o)
	}
	if err := s.Flush(ctx, true); err != nil {
		t.Fatal(err)
	}
	paths, err := r.List(StatusDir)
	if err != nil {
		t.Fatal(err)
	}
	parts := 0
	for _, p := range paths {
		data, err := r.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := partOf(p); ok {
			parts++
			if strings.Contains(p, "/runs/") {
				assertPartReadsAsGoYAMLDoes[runPart](t, p, data)
			} else {
				assertPartReadsAsGoYAMLDoes[placementPart](t, p, data)
			}
			continue
		}
		fast, ok := decodeOwn(data)
		switch kind := kindOfFile(t, data); kind {
		case "ClusterResourceSnapshot", "ResourceSnapshot", "ClusterResourceOverrideSnapshot", "ResourceOverrideSnapshot":
			if ok {
				t.Errorf("%s: a %s, which keeps raw JSON, was read the fast way", p, kind)
			}
			continue
		}
		if !ok {
			t.Errorf("%s: not read the fast way:\n%s", p, data)
			continue
		}
		if long := decodeLong(t, data); !reflect.DeepEqual(fast, long) {
			t.Errorf("%s: read the fast way as\n%#v\nwant\n%#v", p, fast, long)
		}
	}
	if parts == 0 {
		t.Fatal("no parts written")
	}
}

// assertPartReadsAsGoYAMLDoes checks that a part file the store wrote is
// read without go-yaml, as go-yaml reads it.
func assertPartReadsAsGoYAMLDoes[T any](t *testing.T, p string, data []byte) {
	t.Helper()
	var fast, long T
	if !unmarshalOwn(data, &fast) {
		t.Errorf("%s: not read the fast way", p)
	}
	if err := strictUnmarshal(data, &long); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fast, long) {
		t.Errorf("%s: read the fast way as\n%#v\nwant\n%#v", p, fast, long)
	}
}

// A file a person wrote may mean something else than what the fast reader
// makes of it; such files, and files with errors, go the long way.
func TestDecodeReadsOtherFilesTheLongWay(t *testing.T) {
	own, err := Encode(withKind([]runtime.Object{approval("team-a")})[0])
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"a plain scalar go-yaml reads as a boolean": strings.Replace(string(own), "targetStage: canary", "targetStage: yes", 1),
		"an unknown field":                          strings.Replace(string(own), "spec:\n", "spec:\n  extra: x\n", 1),
		"a resourceVersion":                         strings.Replace(string(own), "metadata:\n", "metadata:\n  resourceVersion: \"7\"\n", 1),
		"keys out of order":                         strings.Replace(string(own), "  parentStageRollout: example-run\n  targetStage: canary\n", "  targetStage: canary\n  parentStageRollout: example-run\n", 1),
	} {
		t.Run(name, func(t *testing.T) {
			if data == string(own) {
				t.Fatal("the file did not change")
			}
			if _, ok := decodeOwn([]byte(data)); ok {
				t.Errorf("read the fast way:\n%s", data)
			}
		})
	}
	if _, ok := decodeOwn(own); !ok {
		t.Errorf("the store's own file was not read the fast way:\n%s", own)
	}
}
