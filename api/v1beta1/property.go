package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Property-based scheduling (KubeFleet's beta feature): a member cluster
// reports properties — its node count, its CPU and memory capacity,
// allocatable and available, and for some providers costs — and a
// placement's affinity selects clusters by them (propertySelector, in
// required terms) or ranks them (propertySorter, in preferred terms).
// Names, markers and messages are upstream's (clusterresourceplacement_types.go,
// membercluster_types.go, commons.go and pkg/propertyprovider).

// Property names every KubeFleet property provider reports, and the
// built-in collection of the member agent without a provider.
const (
	// NodeCountProperty is the number of nodes of the cluster.
	NodeCountProperty = "kubernetes-fleet.io/node-count"

	// ResourcePropertyNamePrefix starts the name of every resource property,
	// [PREFIX]/[CAPACITY_TYPE]-[RESOURCE_NAME]; their values are read from
	// the member cluster's status.resourceUsage.
	ResourcePropertyNamePrefix = "resources.kubernetes-fleet.io/"

	TotalCPUCapacityProperty          = ResourcePropertyNamePrefix + "total-cpu"
	AllocatableCPUCapacityProperty    = ResourcePropertyNamePrefix + "allocatable-cpu"
	AvailableCPUCapacityProperty      = ResourcePropertyNamePrefix + "available-cpu"
	TotalMemoryCapacityProperty       = ResourcePropertyNamePrefix + "total-memory"
	AllocatableMemoryCapacityProperty = ResourcePropertyNamePrefix + "allocatable-memory"
	AvailableMemoryCapacityProperty   = ResourcePropertyNamePrefix + "available-memory"

	// The capacity types of resource property names.
	TotalCapacityName       = "total"
	AllocatableCapacityName = "allocatable"
	AvailableCapacityName   = "available"

	// PerCPUCoreCostProperty and PerGBMemoryCostProperty are the average
	// hourly cost of a CPU core and of a GB of memory, which KubeFleet's
	// Azure property provider reports, formatted with CostPrecisionTemplate.
	PerCPUCoreCostProperty  = "kubernetes.azure.com/per-cpu-core-cost"
	PerGBMemoryCostProperty = "kubernetes.azure.com/per-gb-memory-cost"
	CostPrecisionTemplate   = "%.3f"
)

// PropertySortOrder is how a property sorter ranks clusters.
// +enum
type PropertySortOrder string

const (
	// Descending prefers higher observed values: the cluster with the
	// maximum value gets the full weight, the minimum none, linearly in
	// between.
	Descending PropertySortOrder = "Descending"
	// Ascending prefers lower observed values: the cluster with the
	// minimum value gets the full weight, the maximum none.
	Ascending PropertySortOrder = "Ascending"
)

// PropertySelectorOperator is the operator that can be used with PropertySelectorRequirements.
// +enum
type PropertySelectorOperator string

const (
	PropertySelectorGreaterThan          PropertySelectorOperator = "Gt"
	PropertySelectorGreaterThanOrEqualTo PropertySelectorOperator = "Ge"
	PropertySelectorEqualTo              PropertySelectorOperator = "Eq"
	PropertySelectorNotEqualTo           PropertySelectorOperator = "Ne"
	PropertySelectorLessThan             PropertySelectorOperator = "Lt"
	PropertySelectorLessThanOrEqualTo    PropertySelectorOperator = "Le"
)

// PropertySelectorRequirement is a specific property requirement when picking clusters for
// resource placement.
type PropertySelectorRequirement struct {
	// Name is the name of the property; it should be a Kubernetes label name.
	// +kubebuilder:validation:Required
	Name string `json:"name"`

	// Operator specifies the relationship between a cluster's observed value of the specified
	// property and the values given in the requirement.
	// +kubebuilder:validation:Required
	Operator PropertySelectorOperator `json:"operator"`

	// Values are a list of values of the specified property which Fleet will compare against
	// the observed values of individual member clusters in accordance with the given
	// operator.
	//
	// At this moment, each value should be a Kubernetes quantity. For more information, see
	// https://pkg.go.dev/k8s.io/apimachinery/pkg/api/resource#Quantity.
	//
	// If the operator is Gt (greater than), Ge (greater than or equal to), Lt (less than),
	// or `Le` (less than or equal to), Eq (equal to), or Ne (ne), exactly one value must be
	// specified in the list.
	//
	// +kubebuilder:validation:MaxItems=1
	// +kubebuilder:validation:Required
	Values []string `json:"values"`
}

// PropertySelector helps user specify property requirements when picking clusters for resource
// placement.
type PropertySelector struct {
	// MatchExpressions is an array of PropertySelectorRequirements. The requirements are AND'd.
	// +kubebuilder:validation:Required
	MatchExpressions []PropertySelectorRequirement `json:"matchExpressions"`
}

// PropertySorter helps user specify how to sort clusters based on a specific property.
type PropertySorter struct {
	// Name is the name of the property which Fleet sorts clusters by.
	// +kubebuilder:validation:Required
	Name string `json:"name"`

	// SortOrder explains how Fleet should perform the sort; specifically, whether Fleet should
	// sort in ascending or descending order.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Enum=Ascending;Descending
	SortOrder PropertySortOrder `json:"sortOrder"`
}

// PropertyName is the name of a cluster property; it should be a Kubernetes label name.
type PropertyName string

// PropertyValue is the value of a cluster property.
type PropertyValue struct {
	// Value is the value of the cluster property.
	//
	// Currently, it should be a valid Kubernetes quantity.
	// For more information, see
	// https://pkg.go.dev/k8s.io/apimachinery/pkg/api/resource#Quantity.
	//
	// +required
	Value string `json:"value"`

	// ObservationTime is when the cluster property is observed.
	// +required
	ObservationTime metav1.Time `json:"observationTime"`
}

// ResourceUsage contains the observed resource usage of a member cluster.
// Unlike upstream's, an empty one (and an unset observation time) is left
// out of the JSON (omitzero), so members without properties keep their
// status as it was.
type ResourceUsage struct {
	// Capacity represents the total resource capacity of all the nodes on a member cluster.
	//
	// A node's total capacity is the amount of resource installed on the node.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`

	// Allocatable represents the total allocatable resources of all the nodes on a member cluster.
	//
	// A node's allocatable capacity is the amount of resource that can actually be used
	// for user workloads, i.e.,
	// allocatable capacity = total capacity - capacities reserved for the OS, kubelet, etc.
	//
	// For more information, see
	// https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`

	// Available represents the total available resources of all the nodes on a member cluster.
	//
	// A node's available capacity is the amount of resource that has not been used yet, i.e.,
	// available capacity = allocatable capacity - capacity that has been requested by workloads.
	//
	// This field is beta-level; it is for the property-based scheduling feature and is only
	// populated when a property provider is enabled in the deployment.
	// +optional
	Available corev1.ResourceList `json:"available,omitempty"`

	// When the resource usage is observed.
	// +optional
	ObservationTime metav1.Time `json:"observationTime,omitempty,omitzero"`
}

// IsPropertyName reports whether a simulated member's annotation key names
// one of the properties it reports: the node count, a resource property
// (resources.kubernetes-fleet.io/<total|allocatable|available>-<resource>)
// or a cost.
func IsPropertyName(key string) bool {
	switch key {
	case NodeCountProperty, PerCPUCoreCostProperty, PerGBMemoryCostProperty:
		return true
	}
	return len(key) > len(ResourcePropertyNamePrefix) && key[:len(ResourcePropertyNamePrefix)] == ResourcePropertyNamePrefix
}
