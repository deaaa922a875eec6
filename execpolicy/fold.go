package execpolicy

import (
	"strings"
	"unicode"
)

// fullFolds are the full case foldings that map one rune to several; the
// rest fold rune by rune.
var fullFolds = map[rune]string{
	'ß': "ss", 'ẞ': "ss", 'ŉ': "ʼn", 'ǰ': "ǰ", 'ΐ': "ΐ", 'ΰ': "ΰ", 'և': "եւ",
	'ﬀ': "ff", 'ﬁ': "fi", 'ﬂ': "fl", 'ﬃ': "ffi", 'ﬄ': "ffl", 'ﬅ': "st", 'ﬆ': "st",
	'İ': "i̇",
}

// foldCase returns s with Unicode full case folding applied, so that
// "STRASSE" and "Straße" fold equal. Canonical-matching rules compare
// folded tokens.
func foldCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		if f, ok := fullFolds[r]; ok {
			b.WriteString(f)
			continue
		}
		b.WriteRune(unicode.ToLower(unicode.ToUpper(r)))
	}
	return b.String()
}
