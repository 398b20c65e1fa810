package v1beta1

// gitfleet's annotations of a rollback (gitfleet's, not KubeFleet's).
const (
	// RollbackOfAnnotation on a run gitfleet generated names the failed run
	// it rolls back; gitfleet proposes no rollback of a rollback.
	RollbackOfAnnotation = GitfleetPrefix + "rollback-of"
	// RollbackAnnotation on a failed run says what gitfleet did about
	// rolling it back: the pull request it opened, or why it opened none.
	RollbackAnnotation = GitfleetPrefix + "rollback"
)
