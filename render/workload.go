package render

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Well-known kinds of the built-in API groups whose scope gitfleet can check
// without discovery. A namespaced kind without a namespace would silently
// become "cluster-scoped" for placement selection; kubectl would have put it
// in the context's namespace, which Git does not have.
var (
	wellKnownNamespaced = map[string]bool{
		"/ConfigMap": true, "/Secret": true, "/Service": true, "/ServiceAccount": true, "/Pod": true,
		"/PersistentVolumeClaim": true, "/ResourceQuota": true, "/LimitRange": true, "/Endpoints": true,
		"/ReplicationController": true,
		"apps/Deployment":        true, "apps/StatefulSet": true, "apps/DaemonSet": true, "apps/ReplicaSet": true,
		"batch/Job": true, "batch/CronJob": true,
		"networking.k8s.io/Ingress": true, "networking.k8s.io/NetworkPolicy": true,
		"rbac.authorization.k8s.io/Role": true, "rbac.authorization.k8s.io/RoleBinding": true,
		"autoscaling/HorizontalPodAutoscaler": true, "policy/PodDisruptionBudget": true,
		"placement.kubernetes-fleet.io/ResourceEnvelope": true,
	}
	wellKnownClusterScoped = map[string]bool{
		"/Namespace": true, "/PersistentVolume": true, "/Node": true,
		"rbac.authorization.k8s.io/ClusterRole": true, "rbac.authorization.k8s.io/ClusterRoleBinding": true,
		"apiextensions.k8s.io/CustomResourceDefinition": true, "storage.k8s.io/StorageClass": true,
		"scheduling.k8s.io/PriorityClass": true, "networking.k8s.io/IngressClass": true,
		"apiregistration.k8s.io/APIService":                           true,
		"admissionregistration.k8s.io/MutatingWebhookConfiguration":   true,
		"admissionregistration.k8s.io/ValidatingWebhookConfiguration": true,
		"placement.kubernetes-fleet.io/ClusterResourceEnvelope":       true,
	}
)

// workloadResource checks and cleans a non-fleet manifest.
func workloadResource(d document, ref ObjectRef, mk func(string, string) ManifestError) (*unstructured.Unstructured, []ManifestError) {
	gk := ref.Group + "/" + ref.Kind
	switch {
	case wellKnownNamespaced[gk] && ref.Namespace == "":
		return nil, []ManifestError{mk("metadata.namespace", fmt.Sprintf("%s is namespaced; set metadata.namespace (Git has no default namespace)", ref.Kind))}
	case wellKnownClusterScoped[gk] && ref.Namespace != "":
		return nil, []ManifestError{mk("metadata.namespace", fmt.Sprintf("not allowed: %s is cluster-scoped", ref.Kind))}
	}
	u := &unstructured.Unstructured{Object: d.obj}
	sanitize(u)
	return u, nil
}

// lastAppliedAnnotation is kubectl's client-side-apply record.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// sanitize drops what an API server writes and nobody should commit (a
// manifest copied from `kubectl get -o yaml`): status, server-set metadata,
// kubectl's last-applied annotation and owner references (UIDs do not
// transfer to member clusters). KubeFleet strips the same before
// snapshotting, so the hash only moves when the intent changes.
func sanitize(u *unstructured.Unstructured) {
	delete(u.Object, "status")
	meta, ok := u.Object["metadata"].(map[string]any)
	if !ok {
		return
	}
	for f := range serverSetMetadata {
		delete(meta, f)
	}
	if ann, ok := meta["annotations"].(map[string]any); ok {
		delete(ann, lastAppliedAnnotation)
		if len(ann) == 0 {
			delete(meta, "annotations")
		}
	}
}

// serverSetMetadata are the metadata fields sanitize drops.
var serverSetMetadata = map[string]bool{
	"resourceVersion": true, "uid": true, "generation": true, "selfLink": true, "creationTimestamp": true,
	"deletionTimestamp": true, "deletionGracePeriodSeconds": true, "managedFields": true, "ownerReferences": true,
}
