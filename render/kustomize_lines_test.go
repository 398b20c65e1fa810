package render

import (
	"errors"
	"testing"
)

// A failed kustomize build names the line of what failed: the line
// kustomize gives for a resource that does not parse, else the entry of
// the kustomization (the root's or a base's) that its message names.
func TestKustomizeErrorsNameTheirLine(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\n"
	for _, tc := range []struct {
		name, kustomization string
		files               map[string]string
		want                string
	}{
		{"a misspelled field", "resources:\n- cm.yaml\nnamePrefx: x-\n", nil,
			`kustomization.yaml:3: namePrefx: kustomize build failed: invalid Kustomization: json: unknown field "namePrefx"`},
		{"a field of the wrong type", "namePrefix: x-\nresources: cm.yaml\n", nil,
			`kustomization.yaml:2: resources: kustomize build failed: invalid Kustomization: json: cannot unmarshal string into Go struct field Kustomization.resources of type []string`},
		{"a missing resource file", "resources:\n- cm.yaml\n- missing.yaml\n", nil,
			`kustomization.yaml:3: resources[1]: kustomize build failed: accumulating resources: accumulation err='accumulating resources from 'missing.yaml': 'missing.yaml' doesn't exist': must build at directory: not a valid directory: 'missing.yaml' doesn't exist`},
		{"a resource listed twice", "resources:\n- cm.yaml\n- cm.yaml\n", nil,
			`kustomization.yaml:3: resources[1]: kustomize build failed: accumulating resources: accumulation err='merging resources from 'cm.yaml': may not add resource with an already registered id: ConfigMap.v1.[noGrp]/a.ns': must build at directory: 'cm.yaml': file is not directory`},
		{"a missing patch file", "resources:\n- cm.yaml\npatches:\n- path: nothere.yaml\n", nil,
			"kustomization.yaml:4: patches[0].path: kustomize build failed: trouble configuring builtin PatchTransformer with config: `\npath: nothere.yaml\n`: failed to get the patch file from path(nothere.yaml): 'nothere.yaml' doesn't exist"},
		{"a patch that matches nothing", "resources:\n- cm.yaml\npatches:\n- path: patch.yaml\n",
			map[string]string{"patch.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: zz\n  namespace: ns\n"},
			`kustomization.yaml:4: patches[0]: kustomize build failed: no resource matches strategic merge patch "ConfigMap.v1.[noGrp]/zz.ns": no matches for Id ConfigMap.v1.[noGrp]/zz.ns; failed to find unique target for patch ConfigMap.v1.[noGrp]/zz.ns`},
		{"a generator's missing file", "configMapGenerator:\n- name: x\n  namespace: ns\n  files:\n  - nofile.txt\n", nil,
			`kustomization.yaml:5: configMapGenerator[0].files[0]: kustomize build failed: loading KV pairs: file sources: [nofile.txt]: 'nofile.txt' doesn't exist`},
		{"a resource that does not parse", "resources:\n- cm.yaml\n- bad.yaml\n",
			map[string]string{"bad.yaml": cm + "data:\n  x: \"oops\n"},
			`bad.yaml:7: kustomize build failed: accumulating resources: accumulating resources from 'bad.yaml': MalformedYAMLError: yaml: line 7: found unexpected end of stream in File: bad.yaml`},
		// kyaml counts from the document's start (line 3 of the second
		// document is the file's line 9).
		{"a resource that does not parse in its second document", "resources:\n- sub/multi.yaml\n",
			map[string]string{"sub/multi.yaml": cm + "---\n" + cm + "  labels: {a: b}\n   x: y\n"},
			`sub/multi.yaml:9: kustomize build failed: accumulating resources: accumulating resources from 'sub/multi.yaml': MalformedYAMLError: yaml: line 3: did not find expected key in File: sub/multi.yaml`},
		{"a base's missing resource file", "resources:\n- base\n",
			map[string]string{"base/kustomization.yaml": "resources:\n- cm.yaml\n- gone.yaml\n", "base/cm.yaml": cm},
			`base/kustomization.yaml:3: resources[1]: kustomize build failed: accumulating resources: accumulation err='accumulating resources from 'base': 'base' must resolve to a file': recursed accumulation of path 'base': accumulating resources: accumulation err='accumulating resources from 'gone.yaml': 'base/gone.yaml' doesn't exist': must build at directory: not a valid directory: 'base/gone.yaml' doesn't exist`},
		{"a base's misspelled field", "resources:\n- base\n",
			map[string]string{"base/kustomization.yaml": "resources:\n- cm.yaml\nnamePrefx: x-\n", "base/cm.yaml": cm},
			`base/kustomization.yaml:3: namePrefx: kustomize build failed: accumulating resources: accumulation err='accumulating resources from 'base': 'base' must resolve to a file': couldn't make target for path 'base': invalid Kustomization: json: unknown field "namePrefx"`},
		{"a base's resource that does not parse", "resources:\n- base\n",
			map[string]string{"base/kustomization.yaml": "resources:\n- bad.yaml\n", "base/bad.yaml": cm + "data:\n  x: \"oops\n"},
			`base/bad.yaml:7: kustomize build failed: accumulating resources: accumulation err='accumulating resources from 'base': 'base' must resolve to a file': recursed accumulation of path 'base': accumulating resources: accumulating resources from 'bad.yaml': MalformedYAMLError: yaml: line 7: found unexpected end of stream in File: bad.yaml`},
		{"a plugin kustomize does not run", "resources:\n- cm.yaml\ngenerators:\n- gen.yaml\n",
			map[string]string{"gen.yaml": "apiVersion: someteam.example.com/v1\nkind: SecretsFromVault\nmetadata:\n  name: gen\n"},
			`kustomization.yaml:4: generators[0]: kustomize build failed: loading generator plugins: failed to load generator: external plugins disabled; unable to load external plugin 'SecretsFromVault'`},
		{"an escaping resource (refused before the build)", "resources:\n- cm.yaml\n- ../outside.yaml\n", nil,
			`kustomization.yaml:3: resources[1]: "../outside.yaml" escapes the repository root`},
		{"a build error it cannot place", "resources:\n- cm.yaml\npatches:\n- path: p1.yaml\n- path: p2.yaml\n",
			map[string]string{"p1.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\n",
				"p2.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: zz\n  namespace: ns\n"},
			`kustomization.yaml: kustomize build failed: no resource matches strategic merge patch "ConfigMap.v1.[noGrp]/zz.ns": no matches for Id ConfigMap.v1.[noGrp]/zz.ns; failed to find unique target for patch ConfigMap.v1.[noGrp]/zz.ns`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"kustomization.yaml": tc.kustomization, "cm.yaml": cm}
			for f, data := range tc.files {
				files[f] = data
			}
			_, err := Render(mapFS(files), Options{})
			var merr *ManifestError
			if !errors.As(err, &merr) {
				t.Fatalf("Render: %v, want a *ManifestError", err)
			}
			if got := merr.Error(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
