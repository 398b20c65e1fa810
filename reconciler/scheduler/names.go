package scheduler

import (
	"crypto/sha256"
	"encoding/hex"
)

// BindingName is `<placement>-<cluster>-<8 hex>`, KubeFleet's shape. Upstream
// draws the suffix at random; here it is the start of the sha-256 of
// placement and cluster, so a restart (or another machine replaying the Git
// history) names the binding the same.
func BindingName(placement, cluster string) string {
	sum := sha256.Sum256([]byte(placement + "/" + cluster))
	return placement + "-" + cluster + "-" + hex.EncodeToString(sum[:4])
}
