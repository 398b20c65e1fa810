// Package condmsg bounds what an error says when it becomes the message of
// a Kubernetes condition. metav1.Condition.Message is at most 32,768
// characters: a longer cause (an API server's error listing many fields,
// an admission webhook's long denial, a CRD with a huge schema) makes the
// API server refuse the whole status write, again and again, so the
// object's status never says anything. A binding carries several such
// messages, and a person reads them in `kubectl get -o yaml`.
package condmsg

import (
	"fmt"
	"unicode/utf8"
)

// Max is the most bytes Cap returns, its marker included.
const Max = 1024

// markerRoom is what Cap keeps free for its marker: "… (N more
// characters)" with N of up to 20 digits is 42 bytes.
const markerRoom = 48

// Cap is msg when it is at most Max bytes; else its first bytes, cut on a
// UTF-8 boundary, then "… (N more characters)", N the characters (runes)
// cut off, at most Max bytes in all. A capped message is kept as it is by
// Cap again, so a message built around a capped cause may be capped once
// more.
func Cap(msg string) string {
	if len(msg) <= Max {
		return msg
	}
	cut := Max - markerRoom
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more characters)", msg[:cut], utf8.RuneCountInString(msg[cut:]))
}
