package agent

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/config/crd"

	"github.com/gitfleet/gitfleet/reconciler/member/kube"
)

// appliedWorkCRD is the file of config/crd the agent installs on its
// member, as KubeFleet's member agent chart installs it.
const appliedWorkCRD = "placement.kubernetes-fleet.io_appliedworks.yaml"

// KubeMember is a real member cluster reached through rc, applied to by
// member/kube.WorkApplier: the code of the push transport (server-side
// apply, kstatus, the inventory that prunes, the apply strategy's drift
// and takeover checks); timeout bounds each request (30s when 0). It
// installs the AppliedWork CRD on the member.
func KubeMember(ctx context.Context, rc *rest.Config, timeout time.Duration) (Member, error) {
	applier, err := kube.NewWorkApplier(rc, timeout)
	if err != nil {
		return nil, err
	}
	cl, err := client.New(rc, client.Options{})
	if err != nil {
		return nil, err
	}
	if err := installAppliedWorkCRD(ctx, cl); err != nil {
		return nil, err
	}
	return &kubeMember{WorkApplier: applier, client: cl}, nil
}

func installAppliedWorkCRD(ctx context.Context, cl client.Client) error {
	data, err := crd.Files.ReadFile(appliedWorkCRD)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		return err
	}
	//nolint:staticcheck // client.Apply on unstructured is what ssa itself uses.
	if err := cl.Patch(ctx, u, client.Apply, client.FieldOwner(kube.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("install the AppliedWork CRD on the member: %w", err)
	}
	return nil
}

type kubeMember struct {
	*kube.WorkApplier
	client client.Client
}

func (k *kubeMember) RecordApplied(ctx context.Context, aw *fleet.AppliedWork) error {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(aw)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(fleet.SchemeGroupVersion.String())
	u.SetKind(fleet.KindAppliedWork)
	u.SetManagedFields(nil)
	u.SetResourceVersion("")
	status := u.Object["status"]
	delete(u.Object, "status")
	//nolint:staticcheck // client.Apply on unstructured is what ssa itself uses.
	if err := k.client.Patch(ctx, u, client.Apply, client.FieldOwner(kube.FieldManager), client.ForceOwnership); err != nil {
		return k.Redact(fmt.Errorf("write AppliedWork %s: %w", aw.Name, err))
	}
	st := &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
		"metadata": map[string]any{"name": aw.Name}, "status": status}}
	//nolint:staticcheck // client.Apply on unstructured is what ssa itself uses.
	if err := k.client.Status().Patch(ctx, st, client.Apply, client.FieldOwner(kube.FieldManager), client.ForceOwnership); err != nil {
		return k.Redact(fmt.Errorf("write the status of AppliedWork %s: %w", aw.Name, err))
	}
	return nil
}

func (k *kubeMember) ForgetApplied(ctx context.Context, name string) error {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(fleet.SchemeGroupVersion.String())
	u.SetKind(fleet.KindAppliedWork)
	u.SetName(name)
	if err := k.client.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
		return k.Redact(fmt.Errorf("delete AppliedWork %s: %w", name, err))
	}
	return nil
}
