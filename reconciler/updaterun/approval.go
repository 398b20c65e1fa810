package updaterun

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/hub"
)

// ApprovalRequestName is the name of the approval request of a stage task:
// <run>-before-<stage> or <run>-after-<stage>; the deletion stage's is
// <run>-before-delete-stage.
func ApprovalRequestName(run, stage, taskType string) string {
	stage = stageLabelValue(stage)
	if taskType == fleet.BeforeStageTaskLabelValue {
		return fmt.Sprintf(fleet.BeforeStageApprovalTaskNameFmt, run, stage)
	}
	return fmt.Sprintf(fleet.AfterStageApprovalTaskNameFmt, run, stage)
}

// NewApprovalRequest builds the approval request a run creates for a stage
// task, with the four labels KubeFleet sets (spec §1.5, §4.1).
func NewApprovalRequest(namespace, name, run, stage, taskType string) *fleet.ApprovalRequest {
	return &fleet.ApprovalRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: fleet.PlacementAPIVersion, Kind: fleet.ApprovalRequestKind(namespace)},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: namespace,
			Labels: map[string]string{
				fleet.TargetUpdatingStageNameLabel:   stageLabelValue(stage),
				fleet.TargetUpdateRunLabel:           run,
				fleet.TaskTypeLabel:                  taskType,
				fleet.IsLatestUpdateRunApprovalLabel: "true",
			},
		},
		Spec: fleet.ApprovalRequestSpec{TargetUpdateRun: run, TargetStage: stage},
	}
}

// stageLabelValue is a stage's name where a name or label value must hold
// it: kubernetes-fleet.io/deleteStage cannot, so the deletion stage is
// delete-stage there. The request's spec.targetStage keeps the real name.
func stageLabelValue(stage string) string {
	if stage == fleet.UpdateRunDeleteStageName {
		return fleet.DeleteStageShortName
	}
	return stage
}

// IsApproved reports whether a person approved the request: Approved=True
// observed at the request's generation (spec §4.2).
func IsApproved(ar *fleet.ApprovalRequest) bool {
	return isTrue(find(ar.Status.Conditions, fleet.ApprovalRequestConditionApproved), ar.Generation)
}

// IsApprovalAccepted reports whether a run accepted the approval; from then
// on it is irrevocable.
func IsApprovalAccepted(ar *fleet.ApprovalRequest) bool {
	return isTrue(find(ar.Status.Conditions, fleet.ApprovalRequestConditionApprovalAccepted), ar.Generation)
}

// approvalTask evaluates one Approval task of the current stage (spec §4):
// the request is created when missing (also when a person deleted it before
// approving), its approval accepted and recorded on the task. Once the task
// is approved it is never looked at again.
//
// A Metric task (gate non-nil) is decided the same way, on the same
// request, except that until a person approves or rejects the request its
// gate decides it (metricgate.go); after says when the gate wants the next
// look (0 when nothing but a person or an event moves it).
func (p *pass) approvalTask(task *fleet.StageTaskStatus, stageStatus *fleet.StageUpdatingStatus, taskType string, gate *fleet.MetricGate) (approvedTask bool, after time.Duration, err error) {
	stage := stageStatus.StageName
	if isTrue(find(task.Conditions, fleet.StageTaskConditionApprovalRequestApproved), p.gen) {
		return true, 0, nil
	}
	h := p.r.Hub
	key := hub.Key{Namespace: p.run.Namespace, Name: task.ApprovalRequestName}
	ar, err := h.GetApprovalRequest(p.ctx, key)
	if hub.IsNotFound(err) {
		ar = NewApprovalRequest(p.run.Namespace, task.ApprovalRequestName, p.run.Name, stage, taskType)
		if err := h.CreateApprovalRequest(p.ctx, ar); err != nil {
			return false, 0, fmt.Errorf("creating approval request %s: %w", task.ApprovalRequestName, err)
		}
		p.log.Info("created approval request", "approval_request", task.ApprovalRequestName)
		p.markTaskCreated(task)
		if gate == nil {
			return false, 0, nil
		}
		// A gate evaluates at once, on the request as the hub created it.
		ar, err = h.GetApprovalRequest(p.ctx, key)
	}
	if err != nil {
		return false, 0, fmt.Errorf("reading approval request %s: %w", task.ApprovalRequestName, err)
	}
	p.markTaskCreated(task)
	if ar.Spec.TargetStage != stage || ar.Spec.TargetUpdateRun != p.run.Name {
		ns := p.run.Namespace
		return false, 0, abortf("%s", unexpectedErr("the approval request task `%s/%s` is targeting update run `%s/%s` and stage `%s`, want target update run `%s/%s and stage `%s`",
			ns, ar.Name, ns, ar.Spec.TargetUpdateRun, ar.Spec.TargetStage, ns, p.run.Name, stage))
	}
	accepted, approved := IsApprovalAccepted(ar), IsApproved(ar)
	reason, message := fleet.StageTaskApprovalRequestApprovedReason, TaskApprovalRequestApprovedMessage
	if gate != nil && !accepted {
		if c, rejected := isRejected(ar); rejected {
			return false, 0, p.rejectedByPerson(task, ar, c)
		}
		if approved && find(ar.Status.Conditions, fleet.ApprovalRequestConditionApproved).Reason != fleet.MetricGatePassedReason {
			personDecided(ar, "approved")
			reason = fleet.MetricGateOverriddenReason
		} else {
			passed, after, err := p.metricGate(task, ar, gate, stageStatus)
			if err != nil || !passed {
				// A gate that failed within the failure budget is done.
				return err == nil && isTrue(find(task.Conditions, fleet.StageTaskConditionApprovalRequestApproved), p.gen), after, err
			}
			approved, reason = true, fleet.MetricGatePassedReason
		}
		if rec := ar.Status.MetricGate; rec != nil {
			message = rec.Message
		}
	}
	if !accepted && !approved {
		p.explainIgnoredApproval(task, ar)
		return false, 0, nil
	}
	if approved && !accepted {
		p.set(&ar.Status.Conditions, fleet.ApprovalRequestConditionApprovalAccepted, metav1.ConditionTrue,
			fleet.ApprovalRequestApprovalAcceptedReason, ApprovalAcceptedMessage)
		// The request's own generation, not the run's.
		find(ar.Status.Conditions, fleet.ApprovalRequestConditionApprovalAccepted).ObservedGeneration = ar.Generation
		if err := h.UpdateApprovalRequestStatus(p.ctx, ar); err != nil {
			return false, 0, fmt.Errorf("accepting approval request %s: %w", ar.Name, err)
		}
		p.log.Info("accepted approval request", "approval_request", ar.Name)
	}
	p.set(&task.Conditions, fleet.StageTaskConditionApprovalRequestApproved, metav1.ConditionTrue, reason, message)
	p.observeApprovalLatency(task, taskType)
	return true, 0, nil
}

// rejectedByPerson fails the stage of a Metric task whose request a person
// rejected before its gate decided, recording the rejection on the
// evidence.
func (p *pass) rejectedByPerson(task *fleet.StageTaskStatus, ar *fleet.ApprovalRequest, c *metav1.Condition) error {
	if rec := ar.Status.MetricGate; rec != nil && rec.Verdict != fleet.MetricGateOverridden {
		personDecided(ar, "rejected")
		if err := p.r.Hub.UpdateApprovalRequestStatus(p.ctx, ar); err != nil {
			return fmt.Errorf("recording the rejection of approval request %s: %w", ar.Name, err)
		}
	}
	msg := fmt.Sprintf(RequestRejectedMessageFmt, ar.Name, c.Reason, c.Message)
	p.set(&task.Conditions, fleet.StageTaskConditionApprovalRequestApproved, metav1.ConditionFalse, fleet.MetricGateOverriddenReason, msg)
	p.log.Info("approval request rejected", "approval_request", ar.Name)
	return abortf("%s", msg)
}

func (p *pass) markTaskCreated(task *fleet.StageTaskStatus) {
	p.set(&task.Conditions, fleet.StageTaskConditionApprovalRequestCreated, metav1.ConditionTrue,
		fleet.StageTaskApprovalRequestCreatedReason, TaskApprovalRequestCreatedMessage)
}

// explainIgnoredApproval says on the task, in words, why the request is
// not approved although a person tried: an Approved condition whose
// observedGeneration is not the request's generation (deliberate difference
// 5; KubeFleet ignores it silently), or an edit of the request that was not
// taken, which the hub's feeder notes on the request (a file a commit
// broke). The explanation goes away with its cause.
func (p *pass) explainIgnoredApproval(task *fleet.StageTaskStatus, ar *fleet.ApprovalRequest) {
	var why string
	if c := find(ar.Status.Conditions, fleet.ApprovalRequestConditionApproved); c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration != ar.Generation {
		why = fmt.Sprintf(TaskApprovalIgnoredMessageFmt, c.ObservedGeneration, ar.Generation, ar.Generation)
	} else if note := ar.Annotations[fleet.RejectedChangeAnnotation]; note != "" {
		why = fmt.Sprintf(TaskApprovalFileRejectedMessageFmt, note)
	}
	if why == "" {
		if a := find(task.Conditions, fleet.StageTaskConditionApprovalRequestApproved); a != nil && a.Reason == fleet.StageTaskApprovalIgnoredReason {
			removeCondition(&task.Conditions, fleet.StageTaskConditionApprovalRequestApproved)
		}
		return
	}
	p.set(&task.Conditions, fleet.StageTaskConditionApprovalRequestApproved, metav1.ConditionFalse,
		fleet.StageTaskApprovalIgnoredReason, why)
}

func removeCondition(conds *[]metav1.Condition, t string) {
	out := (*conds)[:0]
	for _, c := range *conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	*conds = out
}

// observeApprovalLatency reports the time from the request's creation to
// its acceptance (spec §7.2).
func (p *pass) observeApprovalLatency(task *fleet.StageTaskStatus, taskType string) {
	if p.r.Metrics == nil {
		return
	}
	created := find(task.Conditions, fleet.StageTaskConditionApprovalRequestCreated)
	approved := find(task.Conditions, fleet.StageTaskConditionApprovalRequestApproved)
	if created == nil || approved == nil {
		return
	}
	p.r.Metrics.ObserveApprovalLatency(p.run, taskType, approved.LastTransitionTime.Sub(created.LastTransitionTime.Time).Seconds())
}
