package render

import (
	"fmt"
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
	sort.SliceStable(rs, func(i, j int) bool { return lessResource(rs[i], rs[j]) })
}

func lessResource(a, b *unstructured.Unstructured) bool {
	ga, gb := a.GroupVersionKind(), b.GroupVersionKind()
	ra, aok := applyRank[ga.Kind]
	rb, bok := applyRank[gb.Kind]
	var ka, kb string
	switch {
	case aok && bok && ra != rb:
		return ra < rb
	case aok && bok:
		ka, kb = ga.GroupVersion().String(), gb.GroupVersion().String()
	case aok:
		return true
	case bok:
		return false
	default:
		ka, kb = ga.String(), gb.String()
	}
	if c := strings.Compare(ka, kb); c != 0 {
		return c < 0
	}
	return fmt.Sprintf("%s/%s", a.GetNamespace(), a.GetName()) < fmt.Sprintf("%s/%s", b.GetNamespace(), b.GetName())
}
