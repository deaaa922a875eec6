package doccheck

import (
	"fmt"
	"regexp"
	"strings"
)

// outsideMarker is the folder of the specifications kept outside the
// repository; no file may mention it. It is spelled in two parts so that
// this file does not trip its own check.
var outsideMarker = "shared" + "/" + "spec"

// oldSpecNames are the base names of the outside specifications. A
// mention of one of them must resolve to a file of the repository.
var oldSpecNames = map[string]bool{
	"protocol": true, "sandbox": true, "unifiedexec": true,
	"shell-escalation": true, "benchmarks": true, "style": true,
}

var (
	// mdToken is a path ending in .md, with what follows it.
	mdToken = regexp.MustCompile(`[A-Za-z0-9_./-]*[A-Za-z0-9_-]+\.md`)
	// sectionRef is a section number right after a cited document.
	sectionRef = regexp.MustCompile(`^ §(\d+(?:\.\d+)*)`)
	// moreSections are further numbers of the same document:
	// "§3.5 and §5.4", "§9.14, §6.3", "§8.2-§8.3", "§5–§6".
	moreSections = regexp.MustCompile(`^\s*(?:,|;|and|or|to|-|–)\s*(?:and\s*)?§(\d+(?:\.\d+)*)`)
	// anchorRef is a heading anchor right after a cited document.
	anchorRef = regexp.MustCompile(`^#([A-Za-z0-9_-]+)`)
	// heading is a Markdown heading, its number when it starts with one.
	heading       = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*$`)
	headingNumber = regexp.MustCompile(`^(\d+(?:\.\d+)*)\.?(?:\s|$)`)
)

// Doc is what citations may name in one document: its section numbers
// and its heading anchors.
type Doc struct {
	Sections map[string]bool
	Anchors  map[string]bool
}

// ParseDoc collects the numbered sections and the anchors of a Markdown
// text. Lines inside fenced code blocks are not headings.
func ParseDoc(text string) Doc {
	d := Doc{Sections: map[string]bool{}, Anchors: map[string]bool{}}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		m := heading.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		if n := headingNumber.FindStringSubmatch(m[1]); n != nil {
			d.Sections[n[1]] = true
		}
		d.Anchors[Slug(m[1])] = true
	}
	return d
}

// Slug is the anchor GitHub gives a heading: lower case, punctuation
// other than '-' and '_' removed, spaces turned into '-'.
func Slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Resolver finds the document a citation in a file names: it returns the
// repository path of the document and whether it exists.
type Resolver func(citingFile, cited string) (string, bool)

// Problems returns one line per broken reference in the text of file:
// a mention of the outside specifications, a cited document that does not
// exist, a section number or anchor the document lacks.
func Problems(file, text string, resolve Resolver, docs func(path string) (Doc, bool)) []string {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		where := fmt.Sprintf("%s:%d", file, i+1)
		if strings.Contains(line, outsideMarker) {
			out = append(out, where+": mentions "+outsideMarker+" (cite a document of the repository)")
		}
		for _, loc := range mdToken.FindAllStringIndex(line, -1) {
			out = append(out, checkToken(where, file, line[loc[0]:loc[1]], line[loc[1]:], resolve, docs)...)
		}
	}
	return out
}

// checkToken checks one .md token and the section numbers or anchor after it.
func checkToken(where, file, token, rest string, resolve Resolver, docs func(string) (Doc, bool)) []string {
	if strings.Contains(token, "://") {
		return nil
	}
	secs := sectionsAfter(rest)
	anchor := anchorRef.FindStringSubmatch(rest)
	base := strings.TrimSuffix(token[strings.LastIndex(token, "/")+1:], ".md")
	cited := len(secs) > 0 || anchor != nil || strings.HasPrefix(token, "docs/") || oldSpecNames[base]
	if !cited {
		return nil
	}
	path, ok := resolve(file, token)
	if !ok {
		return []string{fmt.Sprintf("%s: %s does not exist in the repository", where, token)}
	}
	d, _ := docs(path)
	var out []string
	for _, s := range secs {
		if !d.Sections[s] {
			out = append(out, fmt.Sprintf("%s: %s has no section §%s", where, path, s))
		}
	}
	if anchor != nil && !d.Anchors[anchor[1]] {
		out = append(out, fmt.Sprintf("%s: %s has no heading #%s", where, path, anchor[1]))
	}
	return out
}

// sectionsAfter returns the section numbers cited right after a document
// name: the first, then any joined to it by "and", ",", "-", "–".
func sectionsAfter(rest string) []string {
	m := sectionRef.FindStringSubmatchIndex(rest)
	if m == nil {
		return nil
	}
	secs := []string{rest[m[2]:m[3]]}
	rest = rest[m[1]:]
	for {
		n := moreSections.FindStringSubmatchIndex(rest)
		if n == nil {
			return secs
		}
		secs = append(secs, rest[n[2]:n[3]])
		rest = rest[n[1]:]
	}
}
