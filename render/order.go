package render

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ApplyOrder is KubeFleet's (and Helm's) install order of well-known kinds:
// namespaces before what lives in them, CRDs before custom resources, RBAC
// before workloads.
var ApplyOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "ConfigMap", "StorageClass", "PersistentVolume",
	"PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Role",
	"RoleBinding", "Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
	"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
}

var applyRank = func() map[string]int {
	m := make(map[string]int, len(ApplyOrder))
	for i, k := range ApplyOrder {
		m[k] = i
	}
	return m
}()

// SortResources sorts resources as KubeFleet's resource selector does, so
// snapshots list them in the same order: kinds of ApplyOrder first, in that
// order, and within one kind by group/version, then "namespace/name"; other
// kinds after them, by "group/version, Kind=kind", then "namespace/name".
// The order is total for distinct objects, hence deterministic.
func SortResources(rs []*unstructured.Unstructured) {
	keys := make([]sortKey, len(rs))
	for i, u := range rs {
		keys[i] = keyOf(u)
	}
	idx := make([]int, len(rs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return keys[idx[a]].less(keys[idx[b]]) })
	sorted := make([]*unstructured.Unstructured, len(rs))
	for i, j := range idx {
		sorted[i] = rs[j]
	}
	copy(rs, sorted)
}

// sortKey holds what the comparison needs, computed once per resource.
type sortKey struct {
	rank   int // index in ApplyOrder, or len(ApplyOrder) for other kinds
	gvk    string
	nsName string
}

func keyOf(u *unstructured.Unstructured) sortKey {
	gvk := u.GroupVersionKind()
	k := sortKey{nsName: u.GetNamespace() + "/" + u.GetName()}
	if r, ok := applyRank[gvk.Kind]; ok {
		k.rank, k.gvk = r, gvk.GroupVersion().String()
	} else {
		k.rank, k.gvk = len(ApplyOrder), gvk.String()
	}
	return k
}

func (a sortKey) less(b sortKey) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	if c := strings.Compare(a.gvk, b.gvk); c != 0 {
		return c < 0
	}
	return a.nsName < b.nsName
}
