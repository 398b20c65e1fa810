// Package override applies ClusterResourceOverrides and ResourceOverrides to
// the manifests one member cluster receives, with the semantics and messages
// of KubeFleet's work generator (pkg/controllers/workgenerator/override.go):
//
//   - a ClusterResourceOverride applies to the cluster-scoped resource it
//     names and, through a Namespace it names, to every resource in that
//     namespace; a ResourceOverride applies to the resource it names in its
//     own namespace. ClusterResourceOverrides apply first, so a
//     ResourceOverride wins where both set a field;
//   - within an override, rules apply in order (the later wins); a rule
//     applies to the clusters its clusterSelector matches (an empty selector
//     matches all, a missing one none);
//   - a Delete rule keeps the resource off the cluster;
//   - a JSONPatch rule applies its RFC 6902 operations with
//     github.com/evanphx/json-patch/v5 (KubeFleet's library and version), after
//     replacing ${MEMBER-CLUSTER-NAME} and ${MEMBER-CLUSTER-LABEL-KEY-<key>}
//     in the values; a path that does not exist fails the patch.
//
// Delivery calls Apply with the override snapshots a binding froze; a
// failure is reported as Overridden=False (member.NotOverridden) and nothing of
// the binding is applied.
package override

import (
	"encoding/json"
	"fmt"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Error is an override snapshot that failed on one resource; its message is
// KubeFleet's.
type Error struct {
	// SnapshotKind is ClusterResourceOverrideSnapshot or ResourceOverrideSnapshot.
	SnapshotKind string
	SnapshotName string
	// Target is the resource, as `ConfigMap "settings" in namespace "app"`.
	Target string
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %q failed to apply on %s: %s", e.SnapshotKind, e.SnapshotName, e.Target, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Apply returns obj as cluster receives it after the override snapshots
// (in the binding's order), or deleted=true when a Delete rule keeps it off
// the cluster. obj is not changed. Snapshots that do not select obj are
// skipped, so a binding's whole lists may be passed for every resource.
func Apply(obj *unstructured.Unstructured, cluster *fleet.MemberCluster,
	cros []*fleet.ClusterResourceOverrideSnapshot, ros []*fleet.ResourceOverrideSnapshot) (out *unstructured.Unstructured, deleted bool, err error) {
	out = obj
	fail := func(kind, name string, err error) (*unstructured.Unstructured, bool, error) {
		return nil, false, &Error{SnapshotKind: kind, SnapshotName: name, Target: target(obj), Err: err}
	}
	for _, s := range cros {
		if s.Spec.OverrideSpec.Policy == nil || !croSelects(s.Spec.OverrideSpec.ClusterResourceSelectors, obj) {
			continue
		}
		if out, deleted, err = ApplyRules(out, cluster, s.Spec.OverrideSpec.Policy.OverrideRules); err != nil {
			return fail(fleet.KindClusterResourceOverrideSnapshot, s.Name, err)
		}
		if deleted {
			return nil, true, nil
		}
	}
	for _, s := range ros {
		if s.Spec.OverrideSpec.Policy == nil || !roSelects(s.Spec.OverrideSpec.ResourceSelectors, s.Namespace, obj) {
			continue
		}
		if out, deleted, err = ApplyRules(out, cluster, s.Spec.OverrideSpec.Policy.OverrideRules); err != nil {
			return fail(fleet.KindResourceOverrideSnapshot, s.Name, err)
		}
		if deleted {
			return nil, true, nil
		}
	}
	if out == obj {
		out = obj.DeepCopy()
	}
	return out, false, nil
}

// croSelects: a cluster-scoped resource by its own group, version, kind
// and name; a namespaced one through its Namespace.
func croSelects(selectors []fleet.ResourceSelectorTerm, obj *unstructured.Unstructured) bool {
	gvk, name := obj.GroupVersionKind(), obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		gvk.Group, gvk.Version, gvk.Kind, name = "", "v1", "Namespace", ns
	}
	for _, s := range selectors {
		if s.Group == gvk.Group && s.Version == gvk.Version && s.Kind == gvk.Kind && s.Name == name {
			return true
		}
	}
	return false
}

func roSelects(selectors []fleet.ResourceSelector, namespace string, obj *unstructured.Unstructured) bool {
	if obj.GetNamespace() == "" || obj.GetNamespace() != namespace {
		return false
	}
	gvk := obj.GroupVersionKind()
	for _, s := range selectors {
		if s.Group == gvk.Group && s.Version == gvk.Version && s.Kind == gvk.Kind && s.Name == obj.GetName() {
			return true
		}
	}
	return false
}

// target names a resource in KubeFleet's words.
func target(obj *unstructured.Unstructured) string {
	kind := obj.GetKind()
	if kind == "" {
		kind = "Unknown"
	}
	if ns := obj.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s %q in namespace %q", kind, obj.GetName(), ns)
	}
	return fmt.Sprintf("%s %q", kind, obj.GetName())
}

// ApplyRules applies one override's rules to obj for cluster: the rules
// whose cluster selector matches, in order, until a Delete rule
// (deleted=true). obj is not changed; out is obj itself when no rule
// matched. Errors are the raw causes (an invalid selector, a missing label
// for a variable, a patch that does not apply); Apply names the snapshot.
func ApplyRules(obj *unstructured.Unstructured, cluster *fleet.MemberCluster, rules []fleet.OverrideRule) (out *unstructured.Unstructured, deleted bool, err error) {
	out = obj
	for _, rule := range rules {
		matched, err := RuleMatches(rule, cluster)
		if err != nil {
			return nil, false, err
		}
		if !matched {
			continue
		}
		if rule.OverrideType == fleet.DeleteOverrideType {
			return nil, true, nil
		}
		if out, err = applyJSONPatch(out, cluster, rule.JSONPatchOverrides); err != nil {
			return nil, false, err
		}
	}
	return out, false, nil
}

// RuleMatches reports whether a rule applies to cluster: no clusterSelector
// matches no cluster, one without terms every cluster, otherwise any term's
// label selector.
func RuleMatches(rule fleet.OverrideRule, cluster *fleet.MemberCluster) (bool, error) {
	if rule.ClusterSelector == nil {
		return false, nil
	}
	if len(rule.ClusterSelector.ClusterSelectorTerms) == 0 {
		return true, nil
	}
	for _, term := range rule.ClusterSelector.ClusterSelectorTerms {
		selector, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err != nil {
			return false, fmt.Errorf("invalid cluster label selector %v: %w", term.LabelSelector, err)
		}
		if selector.Matches(labels.Set(cluster.Labels)) {
			return true, nil
		}
	}
	return false, nil
}

// PolicyMatches reports whether any rule of an override applies to cluster:
// the overrides a run records for a cluster are those that match it.
func PolicyMatches(policy *fleet.OverridePolicy, cluster *fleet.MemberCluster) (bool, error) {
	if policy == nil {
		return false, fmt.Errorf("policy is nil")
	}
	for _, rule := range policy.OverrideRules {
		if matched, err := RuleMatches(rule, cluster); err != nil || matched {
			return matched, err
		}
	}
	return false, nil
}

func applyJSONPatch(obj *unstructured.Unstructured, cluster *fleet.MemberCluster, patches []fleet.JSONPatchOverride) (*unstructured.Unstructured, error) {
	if len(patches) == 0 {
		return obj, nil
	}
	ops := make([]fleet.JSONPatchOverride, len(patches))
	for i, p := range patches {
		value, err := substitute(string(p.Value.Raw), cluster)
		if err != nil {
			return nil, err
		}
		ops[i] = fleet.JSONPatchOverride{Operator: p.Operator, Path: p.Path}
		ops[i].Value.Raw = []byte(value)
	}
	patchJSON, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatch.DecodePatch(patchJSON)
	if err != nil {
		return nil, err
	}
	doc, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	patched, err := patch.Apply(doc)
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(patched); err != nil {
		return nil, err
	}
	return out, nil
}

// substitute replaces the cluster name variable, then each label variable,
// in a patch value's JSON text, as KubeFleet does (a variable whose label
// the cluster lacks is an error, not an empty string).
func substitute(value string, cluster *fleet.MemberCluster) (string, error) {
	value = strings.ReplaceAll(value, fleet.OverrideClusterNameVariable, cluster.Name)
	prefix := fleet.OverrideClusterLabelKeyVariablePrefix
	result := value
	for {
		start := strings.Index(result, prefix)
		if start < 0 {
			return result, nil
		}
		length := strings.Index(result[start+len(prefix):], "}")
		if length < 0 {
			return "", fmt.Errorf("input %s is missing the closing bracket `}`", value)
		}
		key := result[start+len(prefix) : start+len(prefix)+length]
		labelValue, ok := cluster.Labels[key]
		if !ok {
			return "", fmt.Errorf("label key %s not found on cluster %s", key, cluster.Name)
		}
		result = result[:start] + labelValue + result[start+len(prefix)+length+1:]
	}
}
