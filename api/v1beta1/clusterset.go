package v1beta1

import (
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The cluster set of a run: which clusters a run covers and what it does
// when the placement's clusters change under it. All of it is gitfleet's
// (KubeFleet issues #733, #845, #638, #512; AKS #5733); without it a run
// behaves exactly as KubeFleet's.

// ClusterSetChangeAction is what a run does when the clusters its placement
// picks change after initialization.
type ClusterSetChangeAction string

const (
	// ClusterSetChangeFail is KubeFleet's behaviour: a cluster that joins
	// or leaves a stage fails the run ("the number of clusters in index
	// `1` stage has changed, new: 2, existing: 1").
	ClusterSetChangeFail ClusterSetChangeAction = "Fail"
	// ClusterSetChangeFreeze keeps the cluster set frozen at
	// initialization (KubeFleet #845): a cluster that joins waits for the
	// next run (status.pendingClusters), a cluster that leaves is skipped
	// in its stage (its Skipped condition), and neither fails the run.
	ClusterSetChangeFreeze ClusterSetChangeAction = "Freeze"
)

// UnmatchedClusterAction is what initialization does with picked clusters
// that no stage of the strategy selects.
type UnmatchedClusterAction string

const (
	// UnmatchedClustersFail is KubeFleet's behaviour: "some clusters are
	// not placed in any stage" fails the initialization.
	UnmatchedClustersFail UnmatchedClusterAction = "Fail"
	// UnmatchedClustersIgnore leaves them out of the run; the run's
	// status.unmatchedClusters lists them.
	UnmatchedClustersIgnore UnmatchedClusterAction = "Ignore"
	// UnmatchedClustersAllow leaves up to maxUnmatched of them out (listed
	// as with Ignore); more fail the initialization as Fail does.
	UnmatchedClustersAllow UnmatchedClusterAction = "Allow"
)

// ClusterSetPolicy says how a run treats changes of its placement's
// clusters and clusters its strategy does not place. The zero value is
// KubeFleet's behaviour.
// +kubebuilder:validation:XValidation:rule="!has(self.maxUnmatched) || (has(self.unmatched) && self.unmatched == 'Allow')",message="maxUnmatched is allowed only with unmatched: Allow"
// +kubebuilder:validation:XValidation:rule="!has(self.unmatched) || self.unmatched != 'Allow' || has(self.maxUnmatched)",message="unmatched: Allow requires maxUnmatched"
type ClusterSetPolicy struct {
	// WhenChanged is Fail (KubeFleet's behaviour, the default) or Freeze
	// (clusters that join after initialization wait for the next run,
	// clusters that leave are skipped in their stage).
	// +kubebuilder:validation:Enum=Fail;Freeze
	// +kubebuilder:validation:Optional
	WhenChanged ClusterSetChangeAction `json:"whenChanged,omitempty"`
	// Unmatched is what initialization does with picked clusters that no
	// stage selects: Fail (KubeFleet's behaviour, the default), Ignore
	// (left out of the run and listed in status.unmatchedClusters) or
	// Allow (as Ignore for up to maxUnmatched clusters, else Fail).
	// +kubebuilder:validation:Enum=Fail;Ignore;Allow
	// +kubebuilder:validation:Optional
	Unmatched UnmatchedClusterAction `json:"unmatched,omitempty"`
	// MaxUnmatched is how many unmatched clusters Allow leaves out: a
	// number, or a percentage of the picked clusters rounded up.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern="^(100|[0-9]|[1-9][0-9])%$"
	// +kubebuilder:validation:XValidation:rule="type(self) != int || self >= 0",message="maxUnmatched must not be negative"
	// +kubebuilder:validation:Optional
	MaxUnmatched *intstr.IntOrString `json:"maxUnmatched,omitempty"`
}

// Freezes reports whether the cluster set is frozen at initialization.
func (c *ClusterSetPolicy) Freezes() bool {
	return c != nil && c.WhenChanged == ClusterSetChangeFreeze
}

// UnmatchedAction is the policy's unmatched action, Fail when unset.
func (c *ClusterSetPolicy) UnmatchedAction() UnmatchedClusterAction {
	if c == nil || c.Unmatched == "" {
		return UnmatchedClustersFail
	}
	return c.Unmatched
}

// Condition of a stage cluster that the run skipped (gitfleet's).
const (
	// ClusterUpdatingConditionSkipped is True on a stage cluster that left
	// the placement after a run that freezes its cluster set was
	// initialized (the run goes on without it), and on a deletion-stage
	// cluster the placement picked again (the run does not delete it).
	ClusterUpdatingConditionSkipped = "Skipped"
	// ClusterLeftPlacementReason is the Skipped condition's reason.
	ClusterLeftPlacementReason = "ClusterLeftPlacement"
	// ClusterJoinedPlacementReason is the reason of the Skipped condition
	// of a deletion-stage cluster the placement picked again: the run
	// does not delete it.
	ClusterJoinedPlacementReason = "ClusterJoinedPlacement"
)

// Messages of the run's own transition rules.
const (
	MsgClusterSetImmutable = "clusterSet is immutable"
	MsgRetryOfImmutable    = "retryOf is immutable"
)

// validateClusterSet checks a run's clusterSet and retryOf beyond the CRD's
// schema (the same rules, for a run read from Git before its schema).
func validateClusterSet(r *UpdateRun, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.Spec.RetryOf != "" && r.Spec.RetryOf == r.Name {
		errs = append(errs, field.Invalid(spec.Child("retryOf"), r.Spec.RetryOf, "a run cannot retry itself"))
	}
	c := r.Spec.ClusterSet
	if c == nil {
		return errs
	}
	p := spec.Child("clusterSet")
	switch c.WhenChanged {
	case "", ClusterSetChangeFail, ClusterSetChangeFreeze:
	default:
		errs = append(errs, field.NotSupported(p.Child("whenChanged"), c.WhenChanged, []ClusterSetChangeAction{ClusterSetChangeFail, ClusterSetChangeFreeze}))
	}
	switch c.Unmatched {
	case "", UnmatchedClustersFail, UnmatchedClustersIgnore:
		if c.MaxUnmatched != nil {
			errs = append(errs, field.Forbidden(p.Child("maxUnmatched"), "maxUnmatched is allowed only with unmatched: Allow"))
		}
	case UnmatchedClustersAllow:
		if c.MaxUnmatched == nil {
			errs = append(errs, field.Required(p.Child("maxUnmatched"), "unmatched: Allow requires maxUnmatched"))
		} else if _, err := intstr.GetScaledValueFromIntOrPercent(c.MaxUnmatched, 100, true); err != nil || c.MaxUnmatched.IntValue() < 0 {
			errs = append(errs, field.Invalid(p.Child("maxUnmatched"), c.MaxUnmatched.String(), "must be a number >= 0 or a percentage"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("unmatched"), c.Unmatched,
			[]UnmatchedClusterAction{UnmatchedClustersFail, UnmatchedClustersIgnore, UnmatchedClustersAllow}))
	}
	return errs
}
