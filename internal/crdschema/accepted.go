package crdschema

import (
	"crypto/sha256"
	"encoding/hex"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Accepted is a set of objects the schemas accepted on create, each by
// Key of its kind and pruned, defaulted content. The API server validates
// an object when it changes, not again while it stays as it is; a reader
// that passes in what it accepted before skips the validation of content
// that has not changed, which the same schema would decide the same (a
// serve of 10,000 members validates the members a commit changes, not all
// of them on every commit).
type Accepted map[string]struct{}

// Key names an object's content for Accepted: its kind and content (the
// JSON of the pruned, defaulted object) hashed together.
func Key(gvk schema.GroupVersionKind, content []byte) string {
	h := sha256.New()
	h.Write([]byte(gvk.String()))
	h.Write([]byte{0})
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Has says whether the content under key was accepted.
func (a Accepted) Has(key string) bool {
	_, ok := a[key]
	return ok
}
