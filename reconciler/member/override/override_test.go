package override

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

const (
	namespaceApp = `
apiVersion: v1
kind: Namespace
metadata:
  name: app
`
	configMapSettings = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: app
data:
  logLevel: debug
`
	clusterRoleReader = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: reader
rules: []
`
	// The examples: the Namespace labelled with the cluster's
	// environment, production logging less.
	croNamespaceLabel = `
clusterResourceSelectors:
- {group: "", version: v1, kind: Namespace, name: app}
policy:
  overrideRules:
  - clusterSelector: {clusterSelectorTerms: []}
    jsonPatchOverrides:
    - {op: add, path: /metadata/labels, value: {environment: "${MEMBER-CLUSTER-LABEL-KEY-environment}", cluster: "${MEMBER-CLUSTER-NAME}"}}
`
	roProdLogLevel = `
resourceSelectors:
- {group: "", version: v1, kind: ConfigMap, name: settings}
policy:
  overrideRules:
  - clusterSelector:
      clusterSelectorTerms:
      - labelSelector: {matchLabels: {environment: prod}}
    jsonPatchOverrides:
    - {op: replace, path: /data/logLevel, value: warn}
`
)

func obj(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func cro(t *testing.T, name, spec string) *fleet.ClusterResourceOverrideSnapshot {
	t.Helper()
	s := &fleet.ClusterResourceOverrideSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := yaml.UnmarshalStrict([]byte(spec), &s.Spec.OverrideSpec); err != nil {
		t.Fatal(err)
	}
	return s
}

func ro(t *testing.T, namespace, name, spec string) *fleet.ResourceOverrideSnapshot {
	t.Helper()
	s := &fleet.ResourceOverrideSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if err := yaml.UnmarshalStrict([]byte(spec), &s.Spec.OverrideSpec); err != nil {
		t.Fatal(err)
	}
	return s
}

func member(name string, kv ...string) *fleet.MemberCluster {
	m := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Labels[kv[i]] = kv[i+1]
	}
	return m
}

func TestApply(t *testing.T) {
	prod := member("prod-east", "environment", "prod", "region", "east")
	staging := member("staging-west", "environment", "staging", "region", "west")
	for _, tc := range []struct {
		name     string
		manifest string
		cluster  *fleet.MemberCluster
		cros     []*fleet.ClusterResourceOverrideSnapshot
		ros      []*fleet.ResourceOverrideSnapshot
		want     string // the delivered manifest; "" when deleted or failed
		deleted  bool
		wantErr  string
	}{
		{name: "a per-environment ConfigMap value on a matching cluster",
			manifest: configMapSettings, cluster: prod,
			ros:  []*fleet.ResourceOverrideSnapshot{ro(t, "app", "settings-0", roProdLogLevel)},
			want: strings.Replace(configMapSettings, "logLevel: debug", "logLevel: warn", 1)},
		{name: "a rule whose cluster selector does not match leaves the resource alone",
			manifest: configMapSettings, cluster: staging,
			ros:  []*fleet.ResourceOverrideSnapshot{ro(t, "app", "settings-0", roProdLogLevel)},
			want: configMapSettings},
		{name: "a Namespace label from the cluster's labels and name",
			manifest: namespaceApp, cluster: prod,
			cros: []*fleet.ClusterResourceOverrideSnapshot{cro(t, "app-namespace-0", croNamespaceLabel)},
			want: namespaceApp + "  labels:\n    cluster: prod-east\n    environment: prod\n"},
		{name: "a ClusterResourceOverride on a Namespace applies to what is in it",
			manifest: configMapSettings, cluster: prod,
			cros: []*fleet.ClusterResourceOverrideSnapshot{cro(t, "app-namespace-0", croNamespaceLabel)},
			want: strings.Replace(configMapSettings, "  namespace: app\n", "  namespace: app\n  labels:\n    cluster: prod-east\n    environment: prod\n", 1)},
		{name: "the ResourceOverride applies after the ClusterResourceOverride and wins",
			manifest: configMapSettings, cluster: prod,
			cros: []*fleet.ClusterResourceOverrideSnapshot{cro(t, "app-namespace-0", `
clusterResourceSelectors: [{group: "", version: v1, kind: Namespace, name: app}]
policy: {overrideRules: [{clusterSelector: {clusterSelectorTerms: []}, jsonPatchOverrides: [{op: replace, path: /data/logLevel, value: info}]}]}`)},
			ros:  []*fleet.ResourceOverrideSnapshot{ro(t, "app", "settings-0", roProdLogLevel)},
			want: strings.Replace(configMapSettings, "logLevel: debug", "logLevel: warn", 1)},
		{name: "within an override the later rule wins",
			manifest: configMapSettings, cluster: staging,
			ros: []*fleet.ResourceOverrideSnapshot{ro(t, "app", "settings-0", `
resourceSelectors: [{group: "", version: v1, kind: ConfigMap, name: settings}]
policy:
  overrideRules:
  - {clusterSelector: {clusterSelectorTerms: []}, jsonPatchOverrides: [{op: replace, path: /data/logLevel, value: info}]}
  - {clusterSelector: {clusterSelectorTerms: []}, jsonPatchOverrides: [{op: replace, path: /data/logLevel, value: error}]}`)},
			want: strings.Replace(configMapSettings, "logLevel: debug", "logLevel: error", 1)},
		{name: "a rule without a cluster selector matches no cluster",
			manifest: configMapSettings, cluster: prod,
			ros: []*fleet.ResourceOverrideSnapshot{ro(t, "app", "settings-0", `
resourceSelectors: [{group: "", version: v1, kind: ConfigMap, name: settings}]
policy: {overrideRules: [{jsonPatchOverrides: [{op: replace, path: /data/logLevel, value: info}]}]}`)},
			want: configMapSettings},
		{name: "a ResourceOverride of another namespace does not apply",
			manifest: configMapSettings, cluster: prod,
			ros:  []*fleet.ResourceOverrideSnapshot{ro(t, "web", "settings-0", roProdLogLevel)},
			want: configMapSettings},
		{name: "a ClusterResourceOverride names a cluster-scoped resource by group, version, kind and name",
			manifest: clusterRoleReader, cluster: staging,
			cros: []*fleet.ClusterResourceOverrideSnapshot{cro(t, "reader-0", `
clusterResourceSelectors: [{group: rbac.authorization.k8s.io, version: v1, kind: ClusterRole, name: reader}]
policy: {overrideRules: [{clusterSelector: {clusterSelectorTerms: []}, jsonPatchOverrides: [{op: add, path: /metadata/annotations, value: {region: "${MEMBER-CLUSTER-LABEL-KEY-region}"}}]}]}`)},
			want: strings.Replace(clusterRoleReader, "  name: reader\n", "  name: reader\n  annotations:\n    region: west\n", 1)},
		{name: "Delete keeps the resource off the matching cluster",
			manifest: configMapSettings, cluster: staging,
			ros: []*fleet.ResourceOverrideSnapshot{ro(t, "app", "settings-0", `
resourceSelectors: [{group: "", version: v1, kind: ConfigMap, name: settings}]
policy: {overrideRules: [{clusterSelector: {clusterSelectorTerms: [{labelSelector: {matchLabels: {environment: staging}}}]}, overrideType: Delete}]}`)},
			deleted: true},
		{name: "a JSON pointer into nothing fails with KubeFleet's message",
			manifest: configMapSettings, cluster: prod,
			ros: []*fleet.ResourceOverrideSnapshot{ro(t, "app", "settings-0", `
resourceSelectors: [{group: "", version: v1, kind: ConfigMap, name: settings}]
policy: {overrideRules: [{clusterSelector: {clusterSelectorTerms: []}, jsonPatchOverrides: [{op: replace, path: /data/replicas, value: "3"}]}]}`)},
			wantErr: `ResourceOverrideSnapshot "settings-0" failed to apply on ConfigMap "settings" in namespace "app": replace operation does not apply: doc is missing key: /data/replicas: missing value`},
		{name: "adding below a missing parent fails",
			manifest: namespaceApp, cluster: prod,
			cros: []*fleet.ClusterResourceOverrideSnapshot{cro(t, "app-namespace-0", `
clusterResourceSelectors: [{group: "", version: v1, kind: Namespace, name: app}]
policy: {overrideRules: [{clusterSelector: {clusterSelectorTerms: []}, jsonPatchOverrides: [{op: add, path: /metadata/labels/environment, value: prod}]}]}`)},
			wantErr: `ClusterResourceOverrideSnapshot "app-namespace-0" failed to apply on Namespace "app": add operation does not apply: doc is missing path: "/metadata/labels/environment": missing value`},
		{name: "a label variable the cluster lacks fails",
			manifest: namespaceApp, cluster: member("bare"),
			cros:    []*fleet.ClusterResourceOverrideSnapshot{cro(t, "app-namespace-0", croNamespaceLabel)},
			wantErr: `ClusterResourceOverrideSnapshot "app-namespace-0" failed to apply on Namespace "app": label key environment not found on cluster bare`},
		{name: "a label variable without its closing bracket fails",
			manifest: configMapSettings, cluster: prod,
			ros: []*fleet.ResourceOverrideSnapshot{ro(t, "app", "settings-0", `
resourceSelectors: [{group: "", version: v1, kind: ConfigMap, name: settings}]
policy: {overrideRules: [{clusterSelector: {clusterSelectorTerms: []}, jsonPatchOverrides: [{op: replace, path: /data/logLevel, value: "${MEMBER-CLUSTER-LABEL-KEY-level"}]}]}`)},
			wantErr: `ResourceOverrideSnapshot "settings-0" failed to apply on ConfigMap "settings" in namespace "app": input "${MEMBER-CLUSTER-LABEL-KEY-level" is missing the closing bracket ` + "`}`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := obj(t, tc.manifest)
			before := in.DeepCopy()
			got, deleted, err := Apply(in, tc.cluster, tc.cros, tc.ros)
			if tc.wantErr != "" {
				var oerr *Error
				if err == nil || err.Error() != tc.wantErr || !errors.As(err, &oerr) {
					t.Fatalf("err = %v\nwant  %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if deleted != tc.deleted {
				t.Fatalf("deleted = %v, want %v", deleted, tc.deleted)
			}
			if !equalObjects(in, before) {
				t.Errorf("Apply changed its input")
			}
			if tc.deleted {
				if got != nil {
					t.Errorf("a deleted resource came back: %v", got)
				}
				return
			}
			if !equalObjects(got, obj(t, tc.want)) {
				gotYAML, _ := yaml.Marshal(got.Object)
				t.Errorf("got\n%s\nwant%s", gotYAML, tc.want)
			}
		})
	}
}

func equalObjects(a, b *unstructured.Unstructured) bool {
	ay, _ := yaml.Marshal(a.Object)
	by, _ := yaml.Marshal(b.Object)
	return string(ay) == string(by)
}

func TestRuleAndPolicyMatches(t *testing.T) {
	east := member("east-1", "region", "eastus")
	sel := func(kv ...string) *fleet.ClusterSelector {
		terms := []fleet.ClusterSelectorTerm{}
		for i := 0; i+1 < len(kv); i += 2 {
			terms = append(terms, fleet.ClusterSelectorTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{kv[i]: kv[i+1]}}})
		}
		return &fleet.ClusterSelector{ClusterSelectorTerms: terms}
	}
	for _, tc := range []struct {
		name  string
		rules []fleet.OverrideRule
		want  bool
	}{
		{"no selector matches no cluster", []fleet.OverrideRule{{}}, false},
		{"a selector without terms matches every cluster", []fleet.OverrideRule{{ClusterSelector: sel()}}, true},
		{"terms are ORed", []fleet.OverrideRule{{ClusterSelector: sel("region", "westus", "region", "eastus")}}, true},
		{"no term matches", []fleet.OverrideRule{{ClusterSelector: sel("region", "westus")}}, false},
		{"the policy matches when any rule does", []fleet.OverrideRule{{ClusterSelector: sel("region", "westus")}, {ClusterSelector: sel("region", "eastus")}}, true},
		// Validation refuses property terms in overrides; one that reaches a
		// Kubernetes hub past it selects by labels only, as KubeFleet's
		// overrider does: without a label selector, no cluster.
		{"a property-only term matches no cluster", []fleet.OverrideRule{{ClusterSelector: &fleet.ClusterSelector{ClusterSelectorTerms: []fleet.ClusterSelectorTerm{{
			PropertySelector: &fleet.PropertySelector{MatchExpressions: []fleet.PropertySelectorRequirement{{Name: fleet.NodeCountProperty, Operator: fleet.PropertySelectorGreaterThan, Values: []string{"0"}}}}}}}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PolicyMatches(&fleet.OverridePolicy{OverrideRules: tc.rules}, east)
			if err != nil || got != tc.want {
				t.Errorf("PolicyMatches = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	bad := fleet.OverrideRule{ClusterSelector: &fleet.ClusterSelector{ClusterSelectorTerms: []fleet.ClusterSelectorTerm{{LabelSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Maybe"}}}}}}}
	if _, err := RuleMatches(bad, east); err == nil || !strings.Contains(err.Error(), `invalid cluster label selector`) {
		t.Errorf("an invalid selector gave %v", err)
	}
	if _, err := PolicyMatches(nil, east); err == nil {
		t.Errorf("a nil policy matched without error")
	}
}
