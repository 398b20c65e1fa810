// Package admission says which changes of fleet objects a hub refuses, the
// same on both hubs: config/crd's schema as kube-apiserver applies it
// (crdschema: its CEL transition rules compare with the stored object)
// first, then gitfleet's own checks of what KubeFleet's webhooks refuse,
// which see only what the schema let through. Objects are created by
// render, which applies the schema on its own; this package is the update.
package admission

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/internal/crdschema"
)

// Update returns why cur may not replace old (both of one kind, as render
// decodes them or a hub stores them), nil when it may.
func Update(old, cur runtime.Object) field.ErrorList {
	if unchanged(old, cur) {
		// The API server ratchets: with nothing changed, no field or rule
		// of the schema refuses what it stores already, nor do the
		// webhooks' transition checks. Serve re-applies every object of
		// a commit; this keeps 10,000 unchanged ones from being converted
		// and validated on every sync.
		return nil
	}
	if errs := schemaUpdate(old, cur); len(errs) > 0 {
		return errs
	}
	switch c := cur.(type) {
	case *fleet.Placement:
		if o, ok := old.(*fleet.Placement); ok {
			return fleet.ValidatePlacementUpdate(o, c)
		}
	}
	return nil
}

// schemaUpdate applies the schema of cur's kind as an update of old. The
// status stays out of it, as in an update of the main resource.
func schemaUpdate(old, cur runtime.Object) field.ErrorList {
	info, ok := fleet.KindFor(cur)
	if !ok {
		return nil
	}
	gvk := info.GroupVersionKind
	v, ok := crdschema.Fleet().For(gvk)
	if !ok {
		return nil
	}
	content := func(o runtime.Object) (map[string]any, error) {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
		m = v.WithoutStatus(m)
		v.Prune(m)
		v.Default(m)
		return m, nil
	}
	o, err := content(old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("stored %s: %w", gvk.Kind, err))}
	}
	c, err := content(cur)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("%s: %w", gvk.Kind, err))}
	}
	return v.ValidateUpdate(c, o)
}

// unchanged says whether cur has old's spec, name, labels and
// annotations: all that an update of the main resource can change (the
// status and the server's metadata are not the author's).
func unchanged(old, cur runtime.Object) bool {
	o, c := reflect.ValueOf(old), reflect.ValueOf(cur)
	if o.Type() != c.Type() || o.Kind() != reflect.Pointer || o.IsNil() || c.IsNil() {
		return false
	}
	oSpec, cSpec := o.Elem().FieldByName("Spec"), c.Elem().FieldByName("Spec")
	om, oerr := meta.Accessor(old)
	cm, cerr := meta.Accessor(cur)
	if !oSpec.IsValid() || !cSpec.IsValid() || oerr != nil || cerr != nil {
		return false
	}
	return om.GetName() == cm.GetName() && om.GetNamespace() == cm.GetNamespace() &&
		equality.Semantic.DeepEqual(om.GetLabels(), cm.GetLabels()) &&
		equality.Semantic.DeepEqual(om.GetAnnotations(), cm.GetAnnotations()) &&
		equality.Semantic.DeepEqual(oSpec.Interface(), cSpec.Interface())
}
