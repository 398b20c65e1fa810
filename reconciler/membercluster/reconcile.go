package membercluster

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
)

// Names and labels KubeFleet's hub gives a member's objects.
const (
	// Finalizer holds a deleted MemberCluster until its agent has left.
	Finalizer = fleet.FleetPrefix + "membercluster-finalizer"
	// FleetResourceLabel marks the member's namespace as the fleet's.
	FleetResourceLabel = fleet.FleetPrefix + "is-fleet-resource"
	// FieldManager is the field manager of what the controller writes
	// (KubeFleet's member cluster controller's).
	FieldManager = "member-cluster-controller"
	// DriverWork is the gitfleet.io/driver of a member that pulls.
	DriverWork = "work"
)

// Namespace is the member's namespace on the hub, fleet-member-<cluster>.
func Namespace(member string) string { return fleet.MemberNamespacePrefix + member }

// RoleName and RoleBindingName name what grants the member's identity
// its namespace.
func RoleName(member string) string        { return "fleet-role-" + member }
func RoleBindingName(member string) string { return "fleet-rolebinding-" + member }

// Rules are what a member's identity may do in its namespace: KubeFleet's
// (every fleet kind, fleet networking's kinds, events), nothing outside it.
var Rules = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{fleet.ClusterGroup}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, APIGroups: []string{fleet.PlacementGroup}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, APIGroups: []string{"networking.fleet.azure.com"}, Resources: []string{"*"}},
	{Verbs: []string{"get", "list", "update", "patch", "watch", "create"}, APIGroups: []string{""}, Resources: []string{"events"}},
}

// Pulled reports whether m is a member that pulls its Works.
func Pulled(m *fleet.MemberCluster) bool { return m.Annotations[fleet.DriverAnnotation] == DriverWork }

// reconcile brings member name's hub side to what its MemberCluster asks
// and returns when to look again by the clock (0: not before a change).
func (c *Controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	m, err := c.member(name)
	if err != nil || m == nil || !Pulled(m) {
		return 0, err
	}
	imc, err := c.internalMember(name)
	if err != nil {
		return 0, err
	}
	if m.DeletionTimestamp != nil {
		return c.handleDelete(ctx, m, imc)
	}
	if !slices.Contains(m.Finalizers, Finalizer) {
		if err := c.patchFinalizers(ctx, m, append(slices.Clone(m.Finalizers), Finalizer)); err != nil {
			return 0, err
		}
	}
	before := m.Status.DeepCopy()
	if imc, err = c.join(ctx, m, imc); err != nil {
		return 0, err
	}
	syncStatus(imc, m)
	next := c.markHealth(m)
	return next, c.writeStatus(ctx, m, before)
}

// join makes the hub ready for the member's agent: its namespace, Role
// and RoleBinding, and its InternalMemberCluster with state Join; then
// ReadyToJoin is True (it never turns False after).
func (c *Controller) join(ctx context.Context, m *fleet.MemberCluster, imc *fleet.InternalMemberCluster) (*fleet.InternalMemberCluster, error) {
	ready := meta.FindStatusCondition(m.Status.Conditions, ConditionReadyToJoin)
	if imc != nil && ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == m.Generation &&
		imc.Spec == expectedSpec(m) {
		return imc, nil // joined at this generation: nothing of join changed
	}
	if err := c.syncNamespace(ctx, m); err != nil {
		return nil, fmt.Errorf("failed to sync namespace: %w", err)
	}
	if err := c.syncRole(ctx, m); err != nil {
		return nil, fmt.Errorf("failed to sync role: %w", err)
	}
	if err := c.syncRoleBinding(ctx, m); err != nil {
		return nil, fmt.Errorf("failed to sync role binding: %w", err)
	}
	imc, err := c.syncInternalMember(ctx, m, imc)
	if err != nil {
		return nil, fmt.Errorf("failed to sync internal member cluster spec: %w", err)
	}
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{
		Type: ConditionReadyToJoin, Status: metav1.ConditionTrue, Reason: reasonReadyToJoin,
		Message: "Member cluster is ready to join the fleet", ObservedGeneration: m.Generation,
	})
	return imc, nil
}

func ownerReference(m *fleet.MemberCluster) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: fleet.ClusterGroupVersion.String(), Kind: fleet.KindMemberCluster,
		Name: m.Name, UID: m.UID, Controller: ptr.To(true)}
}

func (c *Controller) syncNamespace(ctx context.Context, m *fleet.MemberCluster) error {
	name := Namespace(m.Name)
	var cur corev1.Namespace
	err := c.client.Get(ctx, client.ObjectKey{Name: name}, &cur)
	switch {
	case apierrors.IsNotFound(err):
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
			OwnerReferences: []metav1.OwnerReference{ownerReference(m)},
			Labels:          map[string]string{FleetResourceLabel: "true"}}}
		if err := c.client.Create(ctx, ns, client.FieldOwner(FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create namespace %s: %w", name, err)
		}
		c.log.Info("created namespace", "member", m.Name, "namespace", name)
		return nil
	case err != nil:
		return fmt.Errorf("failed to get namespace %s: %w", name, err)
	case cur.Labels[FleetResourceLabel] == "":
		patch := client.MergeFrom(cur.DeepCopy())
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		cur.Labels[FleetResourceLabel] = "true"
		if err := c.client.Patch(ctx, &cur, patch, client.FieldOwner(FieldManager)); err != nil {
			return fmt.Errorf("failed to patch namespace %s: %w", name, err)
		}
	}
	return nil
}

func (c *Controller) syncRole(ctx context.Context, m *fleet.MemberCluster) error {
	want := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: RoleName(m.Name), Namespace: Namespace(m.Name),
		OwnerReferences: []metav1.OwnerReference{ownerReference(m)}}, Rules: Rules}
	var cur rbacv1.Role
	err := c.client.Get(ctx, client.ObjectKeyFromObject(want), &cur)
	switch {
	case apierrors.IsNotFound(err):
		if err := c.client.Create(ctx, want, client.FieldOwner(FieldManager)); err != nil {
			return fmt.Errorf("failed to create role %s with rules %+v: %w", want.Name, want.Rules, err)
		}
		c.log.Info("created role", "member", m.Name, "role", want.Name)
		return nil
	case err != nil:
		return fmt.Errorf("failed to get role %s: %w", want.Name, err)
	case reflect.DeepEqual(cur.Rules, want.Rules):
		return nil
	}
	cur.Rules = want.Rules
	if err := c.client.Update(ctx, &cur, client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("failed to update role %s with rules %+v: %w", want.Name, want.Rules, err)
	}
	return nil
}

// syncRoleBinding binds the member's identity to its Role. A member
// without an identity gets a binding without subjects: its agent must
// reach the hub as someone the hub's admin has granted the namespace.
func (c *Controller) syncRoleBinding(ctx context.Context, m *fleet.MemberCluster) error {
	want := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: RoleBindingName(m.Name), Namespace: Namespace(m.Name),
		OwnerReferences: []metav1.OwnerReference{ownerReference(m)}},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: RoleName(m.Name)}}
	if id := m.Spec.Identity; id != nil {
		s := rbacv1.Subject{Kind: id.Kind, APIGroup: id.APIGroup, Name: id.Name, Namespace: id.Namespace}
		// For User and Group kind, the APIGroup is defaulted to rbac.authorization.k8s.io if not set.
		if s.APIGroup == "" && (s.Kind == rbacv1.GroupKind || s.Kind == rbacv1.UserKind) {
			s.APIGroup = rbacv1.GroupName
		}
		want.Subjects = []rbacv1.Subject{s}
	}
	var cur rbacv1.RoleBinding
	err := c.client.Get(ctx, client.ObjectKeyFromObject(want), &cur)
	switch {
	case apierrors.IsNotFound(err):
		if err := c.client.Create(ctx, want, client.FieldOwner(FieldManager)); err != nil {
			return fmt.Errorf("failed to create role binding %s: %w", want.Name, err)
		}
		c.log.Info("created role binding", "member", m.Name, "subject", want.Subjects)
		return nil
	case err != nil:
		return fmt.Errorf("failed to get role binding %s: %w", want.Name, err)
	case reflect.DeepEqual(cur.Subjects, want.Subjects) && reflect.DeepEqual(cur.RoleRef, want.RoleRef):
		return nil
	case !reflect.DeepEqual(cur.RoleRef, want.RoleRef):
		// The role of a binding cannot change: bind it anew.
		if err := c.client.Delete(ctx, &cur); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to update role binding %s: %w", want.Name, err)
		}
		return c.syncRoleBinding(ctx, m)
	}
	cur.Subjects = want.Subjects
	if err := c.client.Update(ctx, &cur, client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("failed to update role binding %s: %w", want.Name, err)
	}
	return nil
}

// expectedSpec is the InternalMemberCluster spec m asks for: Join while
// it exists, Leave once deleted.
func expectedSpec(m *fleet.MemberCluster) fleet.InternalMemberClusterSpec {
	s := fleet.InternalMemberClusterSpec{State: fleet.ClusterStateJoin, HeartbeatPeriodSeconds: m.Spec.HeartbeatPeriodSeconds}
	if s.HeartbeatPeriodSeconds == 0 {
		s.HeartbeatPeriodSeconds = fleet.DefaultHeartbeatPeriodSeconds
	}
	if m.DeletionTimestamp != nil {
		s.State = fleet.ClusterStateLeave
	}
	return s
}

func (c *Controller) syncInternalMember(ctx context.Context, m *fleet.MemberCluster, cur *fleet.InternalMemberCluster) (*fleet.InternalMemberCluster, error) {
	want := expectedSpec(m)
	if cur == nil {
		imc := &fleet.InternalMemberCluster{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: Namespace(m.Name),
			OwnerReferences: []metav1.OwnerReference{ownerReference(m)}}, Spec: want}
		if err := c.client.Create(ctx, imc, client.FieldOwner(FieldManager)); err != nil {
			return nil, fmt.Errorf("failed to create internal member cluster %s/%s with spec %+v: %w", imc.Namespace, imc.Name, want, err)
		}
		c.log.Info("created internal member cluster", "member", m.Name, "state", want.State)
		return imc, nil
	}
	if cur.Spec == want {
		return cur, nil
	}
	imc := cur.DeepCopy()
	imc.Spec = want
	if err := c.client.Update(ctx, imc, client.FieldOwner(FieldManager)); err != nil {
		return nil, fmt.Errorf("failed to update internal member cluster %s/%s with spec %+v: %w", imc.Namespace, imc.Name, want, err)
	}
	c.log.Info("updated internal member cluster", "member", m.Name, "state", want.State)
	return imc, nil
}

// writeStatus writes m's status when it changed from before.
func (c *Controller) writeStatus(ctx context.Context, m *fleet.MemberCluster, before *fleet.MemberClusterStatus) error {
	if equality.Semantic.DeepEqual(before, &m.Status) {
		return nil
	}
	return c.client.Status().Update(ctx, m, client.FieldOwner(FieldManager))
}

// patchFinalizers sets m's finalizers at its resourceVersion (a stale one
// is a conflict, retried).
func (c *Controller) patchFinalizers(ctx context.Context, m *fleet.MemberCluster, finalizers []string) error {
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": finalizers, "resourceVersion": m.ResourceVersion}})
	if err != nil {
		return err
	}
	obj := &fleet.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: m.Name}}
	if err := c.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager)); err != nil {
		return err
	}
	m.ResourceVersion, m.Finalizers = obj.ResourceVersion, obj.Finalizers
	return nil
}

// handleDelete is the leave flow of a deleted member: ask its agent to
// leave, wait until it has (or ForceDeleteWaitTime passed), then release
// its Works, delete its namespace, wait until it is gone, and drop the
// finalizer.
func (c *Controller) handleDelete(ctx context.Context, m *fleet.MemberCluster, imc *fleet.InternalMemberCluster) (time.Duration, error) {
	if !slices.Contains(m.Finalizers, Finalizer) {
		return 0, nil
	}
	var ns corev1.Namespace
	if err := c.client.Get(ctx, client.ObjectKey{Name: Namespace(m.Name)}, &ns); apierrors.IsNotFound(err) {
		return 0, c.patchFinalizers(ctx, m, slices.DeleteFunc(slices.Clone(m.Finalizers), func(f string) bool { return f == Finalizer }))
	} else if err != nil {
		return 0, err
	}
	// The member's status follows its agent to the end: Joined=False
	// once it left.
	before := m.Status.DeepCopy()
	syncStatus(imc, m)
	if err := c.writeStatus(ctx, m, before); err != nil {
		return 0, err
	}
	if ns.DeletionTimestamp != nil {
		// The namespace controller is removing what it holds.
		c.queue.AddAfter(m.Name, time.Second)
		return 0, nil
	}
	if imc == nil {
		return 0, c.garbageCollect(ctx, m)
	}
	joined := meta.FindStatusCondition(m.Status.Conditions, ConditionJoined)
	if joined != nil && joined.Status == metav1.ConditionFalse && joined.ObservedGeneration == m.Generation {
		c.log.Info("the member's agent has left; removing its namespace", "member", m.Name)
		return 0, c.garbageCollect(ctx, m)
	}
	waited := c.cfg.Clock.Now().Sub(m.DeletionTimestamp.Time)
	if imc.Spec.State == fleet.ClusterStateLeave && waited >= c.cfg.ForceDeleteWaitTime {
		c.log.Warn("the member's agent did not leave in time; removing its namespace", "member", m.Name, "waited", waited.String())
		return 0, c.garbageCollect(ctx, m)
	}
	if _, err := c.syncInternalMember(ctx, m, imc); err != nil {
		return 0, fmt.Errorf("failed to mark the internal member cluster to leave: %w", err)
	}
	return max(c.cfg.ForceDeleteWaitTime-waited, time.Nanosecond), nil
}

// garbageCollect releases the member's Works (their finalizers) and
// deletes its namespace, and with it everything the member had on the hub.
func (c *Controller) garbageCollect(ctx context.Context, m *fleet.MemberCluster) error {
	works := &unstructured.UnstructuredList{}
	works.SetGroupVersionKind(fleet.SchemeGroupVersion.WithKind("WorkList"))
	err := c.client.List(ctx, works, client.InNamespace(Namespace(m.Name)))
	if err != nil && !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("list the works of member cluster %s: %w", m.Name, err)
	}
	for i := range works.Items {
		w := &works.Items[i]
		if len(w.GetFinalizers()) == 0 {
			continue
		}
		if err := c.client.Patch(ctx, w, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("remove the finalizers of work %s/%s: %w", w.GetNamespace(), w.GetName(), err)
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace(m.Name)}}
	if err := c.client.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to remove the cluster namespace %s: %w", ns.Name, err)
	}
	c.queue.AddAfter(m.Name, time.Second) // until the namespace is gone
	return nil
}
