package v1beta1

import (
	"k8s.io/apimachinery/pkg/util/intstr"
)

// FailurePolicy is how many clusters a run may lose and how long a cluster
// may take. The names are those of KubeFleet's open PR #925 (issue #924),
// so manifests stay portable; the percentage and its rounding are Azure
// Kubernetes Fleet Manager's maxAllowedFailures. A run without one behaves
// exactly as KubeFleet's: the first failed cluster fails the run, a slow one
// leaves it Stuck.
type FailurePolicy struct {
	// MaxAllowedClusterFailures is how many clusters of each stage may fail
	// before the stage stops starting clusters and the run fails: an int
	// (0 or more) or a percentage "p%" of the stage's clusters, resolved
	// when the stage starts as ceil(p·N). A stage's own
	// maxAllowedClusterFailures in the strategy overrides it for that
	// stage. Defaults to 1 (PR #925's default).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern="^(100|[1-9]?[0-9])%$"
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self >= 0",message="maxAllowedClusterFailures must be at least 0"
	// +kubebuilder:validation:Optional
	MaxAllowedClusterFailures *intstr.IntOrString `json:"maxAllowedClusterFailures,omitempty"`
	// MaxWaitTimePerClusterMinutes is how long a started cluster may take
	// to become Available; past it the cluster counts as failed, with the
	// reason its binding gives. Defaults to 5 (PR #925's default, the
	// stuck threshold).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Optional
	MaxWaitTimePerClusterMinutes *int32 `json:"maxWaitTimePerClusterMinutes,omitempty"`
}

// Defaults of a FailurePolicy's omitted fields (KubeFleet PR #925).
const (
	DefaultMaxAllowedClusterFailures    = 1
	DefaultMaxWaitTimePerClusterMinutes = 5
)

// UpdateRunPartiallySucceededReason is the Succeeded=True reason of a run
// that finished with failed clusters within its budget (KubeFleet PR #925
// calls the state PartiallySucceeded).
const UpdateRunPartiallySucceededReason = "UpdateRunPartiallySucceeded"
