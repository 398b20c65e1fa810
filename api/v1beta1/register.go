package v1beta1

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The registry: every kind gitfleet reads or writes, in one place. The
// Scheme maps each kind (at every version a manifest may use) to its Go
// type; the KindInfo table adds what a Scheme does not know and kubectl
// needs (scope, resource names, short names, as config/crd declares them).
// Decoding, encoding, the hub's restore and `gitfleet get` go through it
// instead of listing kinds themselves.

// StableVersion is v1beta1's stable twin: every fleet kind is also read at
// v1, into the same Go types, because KubeFleet's v1 and v1beta1 fields are
// the same for what gitfleet reads.
const StableVersion = "v1"

// overrideAlphaVersion is the version KubeFleet's override examples still
// use; the override kinds (not their snapshots) are read at it too.
const overrideAlphaVersion = "v1alpha1"

// gitfleetVersion is the version of gitfleet's own records (Commit,
// GitSource).
const gitfleetVersion = "v1alpha1"

var (
	// SchemeGroupVersion is the placement group at the version gitfleet
	// writes, as KubeFleet's register.go names it.
	SchemeGroupVersion = schema.GroupVersion{Group: PlacementGroup, Version: Version}
	// ClusterGroupVersion is MemberCluster's group at that version.
	ClusterGroupVersion = schema.GroupVersion{Group: ClusterGroup, Version: Version}
	// GitfleetGroupVersion is the group of gitfleet's own records.
	GitfleetGroupVersion = schema.GroupVersion{Group: GitfleetGroup, Version: gitfleetVersion}
)

// KindInfo is one kind gitfleet serves: the version it is written at, the
// resource names its CRD declares (the words kubectl takes for it) and its
// scope. Both kinds of a family share one Go type (see the package doc);
// Namespaced tells them apart.
// +kubebuilder:object:generate=false
type KindInfo struct {
	schema.GroupVersionKind
	Plural, Singular string
	ShortNames       []string
	Namespaced       bool
	// HubOwned kinds are written by the hub or by gitfleet itself
	// (snapshots, bindings, gitfleet's records), never by a person in the
	// repository.
	HubOwned bool
	// ReadVersions are the other versions a manifest may give the kind.
	ReadVersions []string
	// Agent kinds are how the hub and the members' agents talk (an
	// InternalMemberCluster on the hub, an AppliedWork on the member):
	// written by the hub's member controller and by agents, never held by
	// the engine nor read from Git.
	Agent bool
	// Workload kinds are hub resources that placements select (envelopes):
	// read from Git like any workload resource and never held by the
	// engine, so neither hub stores or watches them as fleet objects.
	Workload bool

	// proto is an empty object of the kind's Go type, for the Scheme.
	proto runtime.Object
	// apiVersion is GroupVersion().String(), made once: decoding
	// compares every file's apiVersion with it.
	apiVersion string
}

// APIVersion is the apiVersion gitfleet writes the kind at.
func (k KindInfo) APIVersion() string {
	if k.apiVersion == "" {
		return k.GroupVersion().String()
	}
	return k.apiVersion
}

// GroupResource is the kind's resource, as API errors name it.
func (k KindInfo) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: k.Group, Resource: k.Plural}
}

// GroupVersionResource is the kind's resource at the version gitfleet
// writes.
func (k KindInfo) GroupVersionResource() schema.GroupVersionResource {
	return k.GroupVersion().WithResource(k.Plural)
}

// New returns an empty object of the kind (nil for a KindInfo not from
// the registry).
func (k KindInfo) New() runtime.Object {
	o, err := Scheme.New(k.GroupVersionKind)
	if err != nil {
		return nil
	}
	return o
}

// kinds is the table the Scheme and the RESTMapper are built from; names,
// short names and scopes are KubeFleet's (TestRegistryMatchesTheCRDs holds
// them to config/crd).
var kinds = []KindInfo{
	fleetKind(ClusterGroup, KindMemberCluster, "memberclusters", false, &MemberCluster{}, "cluster"),
	fleetKind(PlacementGroup, KindClusterResourcePlacement, "clusterresourceplacements", false, &Placement{}, "crp"),
	fleetKind(PlacementGroup, KindResourcePlacement, "resourceplacements", true, &Placement{}, "rp"),
	hubOwned(fleetKind(PlacementGroup, KindClusterSchedulingPolicySnapshot, "clusterschedulingpolicysnapshots", false, &PolicySnapshot{}, "csps")),
	hubOwned(fleetKind(PlacementGroup, KindSchedulingPolicySnapshot, "schedulingpolicysnapshots", true, &PolicySnapshot{}, "sps")),
	hubOwned(fleetKind(PlacementGroup, KindClusterResourceSnapshot, "clusterresourcesnapshots", false, &ResourceSnapshot{}, "crs")),
	hubOwned(fleetKind(PlacementGroup, KindResourceSnapshot, "resourcesnapshots", true, &ResourceSnapshot{}, "rs")),
	hubOwned(fleetKind(PlacementGroup, KindClusterResourceBinding, "clusterresourcebindings", false, &Binding{}, "crb")),
	hubOwned(fleetKind(PlacementGroup, KindResourceBinding, "resourcebindings", true, &Binding{}, "rb")),
	fleetKind(PlacementGroup, KindClusterStagedUpdateStrategy, "clusterstagedupdatestrategies", false, &UpdateStrategy{}, "csus"),
	fleetKind(PlacementGroup, KindStagedUpdateStrategy, "stagedupdatestrategies", true, &UpdateStrategy{}, "sus"),
	fleetKind(PlacementGroup, KindClusterStagedUpdateRun, "clusterstagedupdateruns", false, &UpdateRun{}, "csur"),
	fleetKind(PlacementGroup, KindStagedUpdateRun, "stagedupdateruns", true, &UpdateRun{}, "sur"),
	fleetKind(PlacementGroup, KindClusterApprovalRequest, "clusterapprovalrequests", false, &ApprovalRequest{}, "careq"),
	fleetKind(PlacementGroup, KindApprovalRequest, "approvalrequests", true, &ApprovalRequest{}, "areq"),
	alsoAlpha(fleetKind(PlacementGroup, KindClusterResourceOverride, "clusterresourceoverrides", false, &ClusterResourceOverride{})),
	alsoAlpha(fleetKind(PlacementGroup, KindResourceOverride, "resourceoverrides", true, &ResourceOverride{})),
	hubOwned(fleetKind(PlacementGroup, KindClusterResourceOverrideSnapshot, "clusterresourceoverridesnapshots", false, &ClusterResourceOverrideSnapshot{})),
	hubOwned(fleetKind(PlacementGroup, KindResourceOverrideSnapshot, "resourceoverridesnapshots", true, &ResourceOverrideSnapshot{})),
	workload(fleetKind(PlacementGroup, KindClusterResourceEnvelope, "clusterresourceenvelopes", false, &Envelope{})),
	workload(fleetKind(PlacementGroup, KindResourceEnvelope, "resourceenvelopes", true, &Envelope{})),
	alphaNotStable(fleetKind(PlacementGroup, KindClusterResourcePlacementEviction, "clusterresourceplacementevictions", false, &ClusterResourcePlacementEviction{}, "crpe")),
	alphaNotStable(fleetKind(PlacementGroup, KindClusterResourcePlacementDisruptionBudget, "clusterresourceplacementdisruptionbudgets", false, &ClusterResourcePlacementDisruptionBudget{}, "crpdb")),
	hubOwned(fleetKind(PlacementGroup, KindWork, "works", true, &Work{})),
	agent(fleetKind(ClusterGroup, KindInternalMemberCluster, "internalmemberclusters", true, &InternalMemberCluster{}, "imc")),
	agent(fleetKind(PlacementGroup, KindAppliedWork, "appliedworks", false, &AppliedWork{})),
	gitfleetKind(KindCommit, "commits", &Commit{}),
	gitfleetKind(KindGitSource, "gitsources", &GitSource{}),
	personal(gitfleetKind(KindRolloutWindow, "rolloutwindows", &RolloutWindow{}, "rw")),
}

func fleetKind(group, kind, plural string, namespaced bool, proto runtime.Object, shortNames ...string) KindInfo {
	return withAPIVersion(KindInfo{GroupVersionKind: schema.GroupVersionKind{Group: group, Version: Version, Kind: kind},
		Plural: plural, Singular: strings.ToLower(kind), ShortNames: shortNames, Namespaced: namespaced,
		ReadVersions: []string{StableVersion}, proto: proto})
}

func withAPIVersion(k KindInfo) KindInfo {
	k.apiVersion = k.GroupVersion().String()
	return k
}

func hubOwned(k KindInfo) KindInfo { k.HubOwned = true; return k }

// personal marks a gitfleet kind that people write in the repository
// (RolloutWindow), unlike gitfleet's records.
func personal(k KindInfo) KindInfo { k.HubOwned = false; return k }

// agent marks a kind of the hub–agent protocol; no person writes one.
func agent(k KindInfo) KindInfo { k.Agent, k.HubOwned = true, true; return k }

// workload marks an envelope kind; KubeFleet serves them at v1beta1 only.
func workload(k KindInfo) KindInfo { k.Workload, k.ReadVersions = true, nil; return k }

func alsoAlpha(k KindInfo) KindInfo {
	k.ReadVersions = append(k.ReadVersions, overrideAlphaVersion)
	return k
}

// alphaNotStable kinds are served at v1alpha1 beside v1beta1 and not at v1
// (KubeFleet's evictions and disruption budgets).
func alphaNotStable(k KindInfo) KindInfo {
	k.ReadVersions = []string{overrideAlphaVersion}
	return k
}

func gitfleetKind(kind, plural string, proto runtime.Object, shortNames ...string) KindInfo {
	return withAPIVersion(KindInfo{GroupVersionKind: GitfleetGroupVersion.WithKind(kind),
		Plural: plural, Singular: strings.ToLower(kind), ShortNames: shortNames, HubOwned: true, proto: proto})
}

var (
	// SchemeBuilder registers every kind of the registry.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the fleet kinds, at every version they are read,
	// to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme

	// Scheme holds the fleet kinds and their defaults (Scheme.Default).
	Scheme = newScheme()
)

func addKnownTypes(s *runtime.Scheme) error {
	gvs := map[schema.GroupVersion]bool{}
	for _, k := range kinds {
		for _, v := range append([]string{k.Version}, k.ReadVersions...) {
			gv := schema.GroupVersion{Group: k.Group, Version: v}
			s.AddKnownTypeWithName(gv.WithKind(k.Kind), k.proto)
			gvs[gv] = true
		}
	}
	for gv := range gvs {
		metav1.AddToGroupVersion(s, gv)
	}
	s.AddTypeDefaultingFunc(&Placement{}, func(o any) { SetDefaultsPlacement(o.(*Placement)) })
	s.AddTypeDefaultingFunc(&MemberCluster{}, func(o any) { SetDefaultsMemberCluster(o.(*MemberCluster)) })
	s.AddTypeDefaultingFunc(&UpdateStrategy{}, func(o any) { SetDefaultsUpdateStrategy(o.(*UpdateStrategy)) })
	s.AddTypeDefaultingFunc(&UpdateRun{}, func(o any) { SetDefaultsUpdateRun(o.(*UpdateRun)) })
	s.AddTypeDefaultingFunc(&ClusterResourceOverride{}, func(o any) { SetDefaultsClusterResourceOverride(o.(*ClusterResourceOverride)) })
	s.AddTypeDefaultingFunc(&ResourceOverride{}, func(o any) { SetDefaultsResourceOverride(o.(*ResourceOverride)) })
	return nil
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// byKind indexes the table; kind names are unique across the groups.
var byKind = func() map[string]*KindInfo {
	m := make(map[string]*KindInfo, len(kinds))
	for i := range kinds {
		m[kinds[i].Kind] = &kinds[i]
	}
	return m
}()

// Kinds lists every kind gitfleet serves.
func Kinds() []KindInfo { return append([]KindInfo(nil), kinds...) }

// LookupKind finds a kind by name.
func LookupKind(kind string) (KindInfo, bool) {
	k, ok := byKind[kind]
	if !ok {
		return KindInfo{}, false
	}
	return *k, true
}

// LookupGroupKind finds a kind by group and name.
func LookupGroupKind(gk schema.GroupKind) (KindInfo, bool) {
	k, ok := byKind[gk.Kind]
	if !ok || k.Group != gk.Group {
		return KindInfo{}, false
	}
	return *k, true
}

// KindFor is the kind of obj given its Go type and scope (an empty
// namespace picks the cluster-scoped kind of a family); false for a type
// the registry does not hold and for a namespaced object of a kind that is
// only cluster-scoped (a MemberCluster, say).
func KindFor(obj runtime.Object) (KindInfo, bool) {
	mo, ok := obj.(metav1.Object)
	if !ok {
		return KindInfo{}, false
	}
	namespaced := mo.GetNamespace() != ""
	gvks, _, err := Scheme.ObjectKinds(obj)
	if err != nil {
		return KindInfo{}, false
	}
	for _, gvk := range gvks {
		if k, ok := byKind[gvk.Kind]; ok && k.Namespaced == namespaced {
			return *k, true
		}
	}
	return KindInfo{}, false
}

// MustKindFor is KindFor for objects the caller built itself; it panics on
// a type the registry does not hold.
func MustKindFor(obj runtime.Object) KindInfo {
	k, ok := KindFor(obj)
	if !ok {
		panic(fmt.Sprintf("v1beta1: no kind for %s", reflect.TypeOf(obj)))
	}
	return k
}

// RESTMapper resolves the words kubectl takes for a kind (plural,
// singular, short name, lowercase kind) to the kind and its scope, as
// kubectl resolves them through discovery.
func RESTMapper() meta.RESTMapper {
	var gvs []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, k := range kinds {
		if gv := k.GroupVersion(); !seen[gv] {
			seen[gv] = true
			gvs = append(gvs, gv)
		}
	}
	m := meta.NewDefaultRESTMapper(gvs)
	short := map[string]schema.GroupResource{}
	for _, k := range kinds {
		scope := meta.RESTScopeRoot
		if k.Namespaced {
			scope = meta.RESTScopeNamespace
		}
		m.AddSpecific(k.GroupVersionKind, k.GroupVersionResource(), k.GroupVersion().WithResource(k.Singular), scope)
		for _, s := range k.ShortNames {
			short[s] = k.GroupResource()
		}
	}
	return shortNames{m, short}
}

// shortNames expands a short name to its resource before the delegate
// resolves it, as kubectl's shortcut expander does with discovery's short
// names.
type shortNames struct {
	meta.RESTMapper
	short map[string]schema.GroupResource
}

func (s shortNames) expand(r schema.GroupVersionResource) schema.GroupVersionResource {
	if gr, ok := s.short[r.Resource]; ok && (r.Group == "" || r.Group == gr.Group) {
		r.Group, r.Resource = gr.Group, gr.Resource
	}
	return r
}

func (s shortNames) KindFor(r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return s.RESTMapper.KindFor(s.expand(r))
}

func (s shortNames) KindsFor(r schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return s.RESTMapper.KindsFor(s.expand(r))
}

func (s shortNames) ResourceFor(r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return s.RESTMapper.ResourceFor(s.expand(r))
}

func (s shortNames) ResourcesFor(r schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return s.RESTMapper.ResourcesFor(s.expand(r))
}
