package delivery

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	fleet "github.com/gitfleet/gitfleet/api/v1beta1"
	"github.com/gitfleet/gitfleet/reconciler/member"
	"github.com/gitfleet/gitfleet/reconciler/resourcesnapshot"
)

// MemberNamespace is the hub namespace of a member cluster's Works.
func MemberNamespace(cluster string) string { return fleet.MemberNamespacePrefix + cluster }

// Works are what cluster receives of binding b, made as KubeFleet's work
// generator makes them: one Work per resource snapshot of the group, named
// <base>-work for the master and <base>-<subindex> for a sub-snapshot
// (<base> is the placement's name, <namespace>.<name> for a
// ResourcePlacement), holding the snapshot's resources with b's frozen
// overrides applied (one a Delete rule drops is left out), even when none
// is left; and one Work per envelope, <prefix>-envelope-<digest of the
// envelope>, holding the manifests it wraps, overridden, in KubeFleet's
// order. When they cannot be made, failed is the condition b reports
// instead (member.Prepare's: both hubs fail alike). Works are sorted by
// name.
func Works(b *fleet.Binding, cluster *fleet.MemberCluster, src Sources) (works []*fleet.Work, failed *metav1.Condition) {
	return makeWorks(b, cluster, src, false)
}

// PushWorks are Works for a member gitfleet applies them to itself (the
// kubeconfig transport): never stored, so each manifest is kept decoded
// (Manifest.Object, an *unstructured.Unstructured, not to be modified)
// and nothing is encoded or decoded again per apply, and each Work's
// generation is b's, which its status observes.
func PushWorks(b *fleet.Binding, cluster *fleet.MemberCluster, src Sources) (works []*fleet.Work, failed *metav1.Condition) {
	return makeWorks(b, cluster, src, true)
}

func makeWorks(b *fleet.Binding, cluster *fleet.MemberCluster, src Sources, decoded bool) (works []*fleet.Work, failed *metav1.Condition) {
	if _, _, failed := member.Prepare(b, cluster, src.Snapshots, src.ClusterResourceOverrides, src.ResourceOverrides, src.Missing); failed != nil {
		return nil, failed
	}
	fail := func(err error) ([]*fleet.Work, *metav1.Condition) {
		c := member.NotOverridden(b, err.Error())
		return nil, &c
	}
	roHash, croHash := hashOf(b.Spec.ResourceOverrideSnapshots), hashOf(b.Spec.ClusterResourceOverrideSnapshots)
	override := func(res []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
		return member.Override(res, cluster, src.ClusterResourceOverrides, src.ResourceOverrides)
	}
	for _, s := range src.Snapshots {
		prefix := workNamePrefix(s)
		resources, err := resourcesnapshot.Manifests([]*fleet.ResourceSnapshot{s})
		if err != nil {
			c := member.NotSynchronized(b, err.Error())
			return nil, &c
		}
		var plain []*unstructured.Unstructured
		for _, r := range resources {
			if !fleet.IsEnvelope(r) {
				plain = append(plain, r)
				continue
			}
			wrapped, err := fleet.Unwrap(r)
			if err != nil {
				c := member.NotSynchronized(b, err.Error())
				return nil, &c
			}
			objs := make([]*unstructured.Unstructured, len(wrapped))
			for i, w := range wrapped {
				objs[i] = w.Object
			}
			if objs, err = override(objs); err != nil {
				return fail(err)
			}
			w := newWork(fmt.Sprintf(fleet.WorkNameWithEnvelopeCRFmt, prefix, envelopeDigest(r)), b, s, roHash, croHash)
			env := fleet.EnvelopeOf(r)
			w.Labels[fleet.EnvelopeTypeLabel] = env.Type
			w.Labels[fleet.EnvelopeNameLabel] = env.Name
			if env.Type == fleet.ResourceEnvelopeType {
				w.Labels[fleet.EnvelopeNamespaceLabel] = env.Namespace
			}
			ms, err := manifests(objs, false)
			if err != nil {
				return fail(err)
			}
			// KubeFleet's order (extractManifestsFromEnvelopeCR): by the
			// JSON of each manifest, descending, so an unchanged envelope
			// makes an unchanged Work.
			order := make([]int, len(ms))
			for i := range order {
				order[i] = i
			}
			sort.SliceStable(order, func(i, j int) bool { return string(ms[order[i]].Raw) > string(ms[order[j]].Raw) })
			w.Spec.Workload.Manifests = make([]fleet.Manifest, len(ms))
			for i, k := range order {
				w.Spec.Workload.Manifests[i] = ms[k]
				if decoded {
					w.Spec.Workload.Manifests[i] = fleet.Manifest{RawExtension: runtime.RawExtension{Object: objs[k]}}
				}
			}
			works = append(works, w)
		}
		if plain, err = override(plain); err != nil {
			return fail(err)
		}
		w := newWork(prefix, b, s, roHash, croHash)
		if w.Spec.Workload.Manifests, err = manifests(plain, decoded); err != nil {
			return fail(err)
		}
		works = append(works, w)
	}
	if decoded {
		for _, w := range works {
			w.Generation = b.Generation
		}
	}
	sort.Slice(works, func(i, j int) bool { return works[i].Name < works[j].Name })
	return works, nil
}

// newWork is a Work of b made from snapshot s, without manifests.
func newWork(name string, b *fleet.Binding, s *fleet.ResourceSnapshot, roHash, croHash string) *fleet.Work {
	labels := map[string]string{
		fleet.ParentBindingLabel:               b.Name,
		fleet.PlacementTrackingLabel:           b.Labels[fleet.PlacementTrackingLabel],
		fleet.ParentResourceSnapshotIndexLabel: s.Labels[fleet.ResourceIndexLabel],
	}
	if b.Namespace != "" {
		labels[fleet.ParentNamespaceLabel] = b.Namespace
	}
	w := &fleet.Work{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: MemberNamespace(b.Spec.TargetCluster), Labels: labels,
			Annotations: map[string]string{
				fleet.ParentResourceSnapshotNameAnnotation:                b.Spec.ResourceSnapshotName,
				fleet.ParentResourceOverrideSnapshotHashAnnotation:        roHash,
				fleet.ParentClusterResourceOverrideSnapshotHashAnnotation: croHash,
			},
		},
		Spec: fleet.WorkSpec{ApplyStrategy: b.Spec.ApplyStrategy.DeepCopy()},
	}
	w.SetGroupVersionKind(fleet.SchemeGroupVersion.WithKind(fleet.KindWork))
	return w
}

// workNamePrefix is KubeFleet's name of the Work of snapshot s
// (getWorkNamePrefixFromSnapshotName).
func workNamePrefix(s *fleet.ResourceSnapshot) string {
	base := s.Labels[fleet.PlacementTrackingLabel]
	if s.Namespace != "" {
		base = fmt.Sprintf(fleet.WorkNameBaseFmt, s.Namespace, base)
	}
	sub, ok := s.Annotations[fleet.SubindexOfResourceSnapshotAnnotation]
	if !ok {
		return fmt.Sprintf(fleet.FirstWorkNameFmt, base)
	}
	n, _ := strconv.Atoi(sub)
	return fmt.Sprintf(fleet.WorkNameWithSubindexFmt, base, n)
}

// envelopeDigest names an envelope's Work deterministically, as KubeFleet
// does (envelopeWorkNameSuffix): 16 hex digits of the SHA-256 of
// <type>/<namespace>/<name>.
func envelopeDigest(env *unstructured.Unstructured) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{env.GetKind(), env.GetNamespace(), env.GetName()}, "/")))
	return hex.EncodeToString(sum[:8])
}

// hashOf is KubeFleet's hash of an override snapshot list (resource.HashOf:
// the SHA-256 of its JSON), which Works carry so a changed list is seen.
func hashOf(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // lists of strings and names always marshal
	}
	return fmt.Sprintf("%x", sha256.Sum256(data))
}

// manifests are objs as a Work holds them: encoded, or, when decoded,
// as they are.
func manifests(objs []*unstructured.Unstructured, decoded bool) ([]fleet.Manifest, error) {
	out := make([]fleet.Manifest, 0, len(objs))
	for _, o := range objs {
		if decoded {
			out = append(out, fleet.Manifest{RawExtension: runtime.RawExtension{Object: o}})
			continue
		}
		data, err := json.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		out = append(out, fleet.Manifest{RawExtension: runtime.RawExtension{Raw: data}})
	}
	return out, nil
}

// WorkManifests decodes the manifests of a Work, in order (one kept
// decoded, PushWorks', is returned as it is); the error names the ordinal
// of one that does not decode.
func WorkManifests(w *fleet.Work) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(w.Spec.Workload.Manifests))
	for i, m := range w.Spec.Workload.Manifests {
		if u, ok := m.Object.(*unstructured.Unstructured); ok {
			out = append(out, u)
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(m.Raw); err != nil {
			return nil, fmt.Errorf("work %s/%s: manifest %d: %w", w.Namespace, w.Name, i, err)
		}
		out = append(out, u)
	}
	return out, nil
}
