package renderproc_test

import (
	"fmt"
	"strings"
	"testing/fstest"
)

// slowTree is a kustomization whose build takes minutes: every one of
// patches patches applies to every one of objects ConfigMaps (issue 22's
// reproduction was one patch of 10,000 documents).
func slowTree(objects, patches int) fstest.MapFS {
	var res strings.Builder
	for i := range objects {
		fmt.Fprintf(&res, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: default\ndata:\n  k: v\n", i)
	}
	var k strings.Builder
	k.WriteString("resources:\n- cms.yaml\npatches:\n")
	for i := range patches {
		fmt.Fprintf(&k, "- target:\n    kind: ConfigMap\n  patch: |-\n    - op: add\n      path: /data/p%d\n      value: x\n", i)
	}
	return fstest.MapFS{
		"kustomization.yaml": {Data: []byte(k.String())},
		"cms.yaml":           {Data: []byte(res.String())},
	}
}

// bigTree is a plain tree whose render holds a lot in memory: n
// ConfigMaps of a value of size bytes each.
func bigTree(files, n, size int) fstest.MapFS {
	m := fstest.MapFS{}
	value := strings.Repeat("x", size)
	for f := range files {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d-%d\n  namespace: default\ndata:\n  k: %s\n", f, i, value)
		}
		m[fmt.Sprintf("cms-%d.yaml", f)] = &fstest.MapFile{Data: []byte(b.String())}
	}
	return m
}
