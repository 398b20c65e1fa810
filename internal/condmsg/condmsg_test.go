package condmsg

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCapKeepsShortMessagesAndCutsLongOnesOnARuneWithAMarker(t *testing.T) {
	keep := Max - markerRoom
	for _, tc := range []struct {
		name, msg, want string
	}{
		{"empty", "", ""},
		{"short", "waiting for the CRDs and namespaces to be ready", "waiting for the CRDs and namespaces to be ready"},
		{"exactly Max", strings.Repeat("a", Max), strings.Repeat("a", Max)},
		{"one byte over", strings.Repeat("a", Max+1),
			strings.Repeat("a", keep) + "… (49 more characters)"},
		{"far over", strings.Repeat("b", 40000),
			strings.Repeat("b", keep) + "… (39024 more characters)"},
		// "é" is two bytes: the one across the cut goes whole to the cut-off part.
		{"a multi-byte rune at the cut", strings.Repeat("a", keep-1) + strings.Repeat("é", 600),
			strings.Repeat("a", keep-1) + "… (600 more characters)"},
		// "€" is three bytes: cut before the rune whose middle is at the cut.
		{"a three-byte rune across the cut", strings.Repeat("a", keep-2) + strings.Repeat("€", 400),
			strings.Repeat("a", keep-2) + "… (400 more characters)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Cap(tc.msg)
			if got != tc.want {
				t.Errorf("Cap = %.80q… (%d bytes), want %.80q… (%d bytes)", got, len(got), tc.want, len(tc.want))
			}
			if len(got) > Max {
				t.Errorf("Cap returned %d bytes, more than Max %d", len(got), Max)
			}
			if !utf8.ValidString(got) {
				t.Errorf("Cap returned invalid UTF-8")
			}
			if again := Cap(got); again != got {
				t.Errorf("Cap of a capped message changed it: %.80q", again)
			}
		})
	}
}
