// Package crdschema applies config/crd's schemas to fleet objects the way
// kube-apiserver applies a CustomResourceDefinition to a custom resource, by
// the same apiextensions-apiserver packages: unknown fields are pruned (and
// named, as a strict decoder names them), defaults are set, and the OpenAPI
// schema, list types, embedded object metadata and the x-kubernetes-validations
// CEL rules (transition rules with oldSelf on update, ratcheted) are checked,
// with the API server's cost limits. So the embedded hub, `gitfleet validate`
// and the Git side of a Kubernetes hub refuse what a Kubernetes hub's API
// server refuses, with its message, and show the defaults it sets.
//
// Not done here: what the request path adds around the strategy (the
// namespace of a kubectl context, generateName, managed fields) and the
// checks only gitfleet makes; callers run those after.
package crdschema

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sync"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/operation"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"sigs.k8s.io/yaml"

	crdfiles "github.com/gitfleet/gitfleet/config/crd"
)

// Schemas are the served versions of a set of CRDs, by group, version and
// kind, each compiled once (its CEL programs included).
type Schemas struct {
	versions map[schema.GroupVersionKind]*lazyVersion
}

// lazyVersion is compiled on first use: a process that reads only
// MemberClusters compiles one CRD, not nineteen.
type lazyVersion struct {
	compile func() (*Version, error)
}

// Version is one served version of one CRD, ready to default and validate
// objects: what kube-apiserver's custom resource handler builds per
// version (structural schema with pruned defaults, OpenAPI validators, CEL
// validator).
type Version struct {
	GVK        schema.GroupVersionKind
	Namespaced bool
	// status says whether the status subresource is on: then a create or
	// an update of the main resource does not write status.
	status     bool
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
	// embedded and defaults say whether the schema has an embedded
	// resource or a default anywhere: without, the API server's steps for
	// them change nothing, and a serve of 10,000 objects skips their walk.
	embedded, defaults bool
}

var fleet = sync.OnceValue(loadFleet)

// Fleet returns the schemas of config/crd as built into the binary, each
// CRD file parsed and compiled on first use.
func Fleet() *Schemas { return fleet() }

// loadFleet builds config/crd's schemas from fleetIndex, parsing no file:
// every render runs in a fresh worker process that reads one or two kinds,
// and parsing all of config/crd was most of a worker's start.
func loadFleet() *Schemas {
	s := &Schemas{versions: make(map[schema.GroupVersionKind]*lazyVersion, len(fleetIndex))}
	parsed := map[string]func() (*apiextensionsv1.CustomResourceDefinition, error){}
	for gvk, file := range fleetIndex {
		crd, ok := parsed[file]
		if !ok {
			crd = sync.OnceValues(func() (*apiextensionsv1.CustomResourceDefinition, error) {
				return parse(crdfiles.Files, file)
			})
			parsed[file] = crd
		}
		s.versions[gvk] = lazy(crd, file, gvk)
	}
	return s
}

// Load compiles every *.yaml CRD at the root of fsys (parsed now, each
// served version compiled on first use).
func Load(fsys fs.FS) (*Schemas, error) {
	files, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, err
	}
	s := &Schemas{versions: map[schema.GroupVersionKind]*lazyVersion{}}
	for _, f := range files {
		crd, err := parse(fsys, f)
		if err != nil {
			return nil, err
		}
		for _, gvk := range served(crd) {
			s.versions[gvk] = lazy(func() (*apiextensionsv1.CustomResourceDefinition, error) { return crd, nil }, f, gvk)
		}
	}
	return s, nil
}

// parse reads one CRD file strictly.
func parse(fsys fs.FS, file string) (*apiextensionsv1.CustomResourceDefinition, error) {
	b, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(b, crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path.Base(file), err)
	}
	return crd, nil
}

// served lists the kinds a CRD serves, one a served version.
func served(crd *apiextensionsv1.CustomResourceDefinition) []schema.GroupVersionKind {
	var gvks []schema.GroupVersionKind
	for _, v := range crd.Spec.Versions {
		if v.Served {
			gvks = append(gvks, schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind})
		}
	}
	return gvks
}

// lazy compiles gvk's version of the CRD of file once, on first use.
func lazy(crd func() (*apiextensionsv1.CustomResourceDefinition, error), file string, gvk schema.GroupVersionKind) *lazyVersion {
	return &lazyVersion{compile: sync.OnceValues(func() (*Version, error) {
		c, err := crd()
		if err != nil {
			return nil, err
		}
		for i := range c.Spec.Versions {
			v := &c.Spec.Versions[i]
			if v.Name != gvk.Version || !v.Served || c.Spec.Group != gvk.Group || c.Spec.Names.Kind != gvk.Kind {
				continue
			}
			ver, err := compile(c, v)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", path.Base(file), v.Name, err)
			}
			return ver, nil
		}
		// Only fleetIndex can name a kind its file does not serve;
		// TestIndexMatchesCRDs keeps it true.
		return nil, fmt.Errorf("%s does not serve %s (run make crds)", path.Base(file), gvk)
	})}
}

// compile builds a version as the API server's customresource_handler
// does (getOrCreateServingInfoFor).
func compile(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion) (*Version, error) {
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("no schema")
	}
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
		return nil, err
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("not a structural schema: %w", err)
	}
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	return &Version{
		GVK:        schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind},
		Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		status:     v.Subresources != nil && v.Subresources.Status != nil,
		structural: s,
		validator:  validator,
		// The API server's per-call limit; programs are compiled here, once.
		cel:      cel.NewValidator(s, true, celconfig.PerCallLimit),
		embedded: anywhere(s, func(s *structuralschema.Structural) bool { return s.XEmbeddedResource }),
		defaults: anywhere(s, func(s *structuralschema.Structural) bool { return s.Default.Object != nil }),
	}, nil
}

// For returns the served version of a kind, if any CRD serves it,
// compiling it on first use.
func (s *Schemas) For(gvk schema.GroupVersionKind) (*Version, bool) {
	l, ok := s.versions[gvk]
	if !ok {
		return nil, false
	}
	v, err := l.compile()
	if err != nil {
		// config/crd is generated and tested (internal/crd): a CRD that
		// does not parse or compile is a build defect, not an input error.
		panic(fmt.Sprintf("crdschema: %v", err))
	}
	return v, true
}

// Compile compiles every served version now, for tests and for callers
// that would rather fail early.
func (s *Schemas) Compile() error {
	for _, l := range s.versions {
		if _, err := l.compile(); err != nil {
			return err
		}
	}
	return nil
}

// Prune drops the fields of obj its schema does not declare and returns
// their paths (spec.foo, metadata.bar): what the API server's decoder does
// with a custom resource, which refuses the object when the request asks
// for strict field validation (kubectl's default) with `unknown field
// "<path>"` for each. Nulls of non-nullable fields without default go too.
func (v *Version) Prune(obj map[string]any) []string {
	// The API server writes metadata back as ObjectMeta has it; gitfleet
	// decodes it into ObjectMeta itself, and refuses unknown fields.
	_, _, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(obj, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return []string{"metadata"}
	}
	unknown = append(unknown, structuralpruning.PruneWithOptions(obj, v.structural, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	if hasNull(obj) {
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, v.structural)
	}
	if v.embedded {
		if _, paths := schemaobjectmeta.CoerceWithOptions(nil, obj, v.structural, false,
			schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true}); len(paths) > 0 {
			unknown = append(unknown, paths...)
		}
	}
	return unknown
}

// Default sets the schema's defaults in obj, as the API server does when
// it decodes a custom resource (and again whenever it reads one back).
func (v *Version) Default(obj map[string]any) {
	if v.defaults {
		structuraldefaulting.Default(obj, v.structural)
	}
}

// anywhere says whether has holds for s or a schema within it.
func anywhere(s *structuralschema.Structural, has func(*structuralschema.Structural) bool) bool {
	if s == nil {
		return false
	}
	if has(s) || anywhere(s.Items, has) {
		return true
	}
	if s.AdditionalProperties != nil && anywhere(s.AdditionalProperties.Structural, has) {
		return true
	}
	for k := range s.Properties {
		p := s.Properties[k]
		if anywhere(&p, has) {
			return true
		}
	}
	return false
}

// hasNull says whether x holds a null anywhere.
func hasNull(x any) bool {
	switch x := x.(type) {
	case nil:
		return true
	case map[string]any:
		for _, v := range x {
			if hasNull(v) {
				return true
			}
		}
	case []any:
		for _, v := range x {
			if hasNull(v) {
				return true
			}
		}
	}
	return false
}

// ValidateCreate checks a pruned, defaulted object as the API server's
// custom resource strategy does on create. Status is left out when the
// status subresource is on (the API server drops it), so pass an object's
// status only to validate it as a status write would. The namespace is not
// required here: in Git there is no kubectl context, so gitfleet's own
// rule says which kinds need one.
func (v *Version) ValidateCreate(obj map[string]any) field.ErrorList {
	ctx := context.Background()
	errs := v.validateTypeMeta(obj)
	if len(errs) > 0 {
		return errs
	}
	meta, errs := objectMeta(obj)
	if len(errs) > 0 {
		return errs
	}
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaDeclaratively(ctx, operation.Create, meta, nil,
		meta.Namespace != "", apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"), declarativeBeta())...)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj, v.validator)...)
	if v.embedded {
		errs = append(errs, schemaobjectmeta.Validate(ctx, nil, obj, v.structural, false)...)
	}
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.structural, obj)...)
	if v.cel == nil {
		// No CEL rule in the schema (cel.NewValidator returns nil): the
		// API server has nothing left to skip, and says nothing of it.
		return errs
	}
	if blocking := blockingErr(errs); blocking != nil {
		return append(errs, blocking)
	}
	celErrs, _ := v.cel.Validate(ctx, nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// ValidateUpdate checks a pruned, defaulted object that replaces old as
// the API server's strategy does on update: with validation ratcheting
// (a field left as it was is not refused for a rule it already broke) and
// the CEL transition rules, which compare with oldSelf.
func (v *Version) ValidateUpdate(obj, old map[string]any) field.ErrorList {
	ctx := context.Background()
	errs := v.validateTypeMeta(obj)
	if len(errs) > 0 {
		return errs
	}
	meta, errs := objectMeta(obj)
	if len(errs) > 0 {
		return errs
	}
	oldMeta, errs := objectMeta(old)
	if len(errs) > 0 {
		return errs
	}
	// What the API server keeps from the stored object whatever the
	// request says (rest.BeforeUpdate): Git never carries these.
	meta.UID, meta.CreationTimestamp = oldMeta.UID, oldMeta.CreationTimestamp
	meta.DeletionTimestamp, meta.DeletionGracePeriodSeconds = oldMeta.DeletionTimestamp, oldMeta.DeletionGracePeriodSeconds
	// The generation is the server's too (PrepareForUpdate raises it).
	meta.Generation = oldMeta.Generation
	// An apply or a patch updates the stored version, whichever it is.
	if oldMeta.ResourceVersion == "" {
		oldMeta.ResourceVersion = "1"
	}
	meta.ResourceVersion = oldMeta.ResourceVersion
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaDeclaratively(ctx, operation.Update, meta, oldMeta,
		false, nil, field.NewPath("metadata"), declarativeBeta())...)
	correlated := common.NewCorrelatedObject(obj, old, &model.Structural{Structural: v.structural})
	errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, obj, old, v.validator,
		apiservervalidation.WithRatcheting(correlated))...)
	if v.embedded {
		errs = append(errs, schemaobjectmeta.Validate(ctx, nil, obj, v.structural, false)...)
	}
	if oldErrs := structurallisttype.ValidateListSetsAndMaps(nil, v.structural, old); len(oldErrs) == 0 {
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.structural, obj)...)
	}
	if v.cel == nil {
		// No CEL rule in the schema (cel.NewValidator returns nil): the
		// API server has nothing left to skip, and says nothing of it.
		return errs
	}
	if blocking := blockingErr(errs); blocking != nil {
		return append(errs, blocking)
	}
	celErrs, _ := v.cel.Validate(ctx, nil, v.structural, obj, old, celconfig.RuntimeCELCostBudget, cel.WithRatcheting(correlated))
	return append(errs, celErrs...)
}

// WithoutStatus returns obj without its status when the status subresource
// is on, as the API server's strategy prepares a create or an update of
// the main resource (the map is copied shallowly, obj is not changed).
func (v *Version) WithoutStatus(obj map[string]any) map[string]any {
	if _, ok := obj["status"]; !ok || !v.status {
		return obj
	}
	out := make(map[string]any, len(obj))
	for k, x := range obj {
		if k != "status" {
			out[k] = x
		}
	}
	return out
}

func declarativeBeta() bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.DeclarativeValidationBeta)
}

func (v *Version) validateTypeMeta(obj map[string]any) field.ErrorList {
	var errs field.ErrorList
	if kind, _ := obj["kind"].(string); kind != v.GVK.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), kind, fmt.Sprintf("must be %v", v.GVK.Kind)))
	}
	if apiVersion, _ := obj["apiVersion"].(string); apiVersion != v.GVK.GroupVersion().String() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), apiVersion, fmt.Sprintf("must be %v", v.GVK.GroupVersion())))
	}
	return errs
}

func objectMeta(obj map[string]any) (*metav1.ObjectMeta, field.ErrorList) {
	meta := &metav1.ObjectMeta{}
	raw := obj["metadata"]
	if raw == nil {
		return meta, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, field.ErrorList{field.Invalid(field.NewPath("metadata"), raw, fmt.Sprintf("expected map[string]interface{}, got %T", raw))}
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, meta); err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath("metadata"), raw, err.Error())}
	}
	return meta, nil
}

// blockingErr is the API server's rule for skipping the CEL rules: an
// object whose schema errors are of these types may not even have the
// shape the rules assume.
func blockingErr(errs field.ErrorList) *field.Error {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return nil
}
