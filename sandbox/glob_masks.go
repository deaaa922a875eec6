package sandbox

import (
	"math"
	"path/filepath"
	"strings"
)

// Limits of deny-glob expansion (docs/sandbox.md §3.5). A mask, and a pin
// of a folder holding masks, is one mount in the helper (tens of µs each,
// set-up and tear-down), so their number is what a planted flood of
// matches would drive up.
const (
	// maxGlobMatches is how many mounts the matches may cost before
	// folders are masked whole instead of the matches in them.
	maxGlobMatches = 8192
	// maxGlobMasks caps the mounts that cannot be folded into a folder:
	// matches and folders lying directly in a folder the command needs (a
	// root, its working folder, or a folder above one). More fails the
	// request.
	maxGlobMasks = 16384
	// globFoldAt folds the masks while walking once there are this many,
	// and maxGlobNodes once this many folders hold them: memory stays
	// bounded whatever the walk finds.
	globFoldAt   = 4 * maxGlobMatches
	maxGlobNodes = 65536
)

// maskSet collects what the deny globs matched as a tree of folders, and
// folds it: when there are too many masks, folders are masked whole
// instead of their matches. A folder is foldable when it lies in a
// walked search root and holds none of the anchors (the request's roots,
// its working folder, our own folder): masking it whole must not hide
// what the command was given.
type maskSet struct {
	nodes  map[string]*maskNode
	pinned map[string]bool // the anchors and every folder above them
	scans  []string        // the walked search roots
	total  int             // masks: entries plus folders masked whole
}

// maskNode is one folder of the tree.
type maskNode struct {
	path     string
	parent   *maskNode
	children map[string]*maskNode
	entries  map[string]bool // the matched names in it
	foldable bool
	whole    bool // masked whole
}

// newMaskSet returns an empty set that never folds an anchor or a folder
// above one.
func newMaskSet(anchors []string) *maskSet {
	s := &maskSet{nodes: map[string]*maskNode{}, pinned: map[string]bool{}}
	for _, a := range anchors {
		if !filepath.IsAbs(a) {
			continue
		}
		for d := filepath.Clean(a); !s.pinned[d]; d = filepath.Dir(d) {
			s.pinned[d] = true
		}
	}
	s.nodes["/"] = &maskNode{path: "/"}
	return s
}

// node returns the node of the folder dir, creating it and the folders
// above it, or nil when dir lies in a folder already masked whole.
func (s *maskSet) node(dir string) *maskNode {
	if n := s.nodes[dir]; n != nil {
		return n
	}
	parent := s.node(filepath.Dir(dir))
	if parent == nil || parent.whole {
		return nil
	}
	n := &maskNode{path: dir, parent: parent, foldable: !s.pinned[dir] && s.scanned(dir)}
	if parent.children == nil {
		parent.children = map[string]*maskNode{}
	}
	parent.children[dir] = n
	s.nodes[dir] = n
	return n
}

// scanned reports whether dir lies in a walked search root.
func (s *maskSet) scanned(dir string) bool {
	for _, r := range s.scans {
		if within(dir, r) {
			return true
		}
	}
	return false
}

// add records the match name in the folder dir.
func (s *maskSet) add(dir, name string) {
	n := s.node(dir)
	if n == nil || n.whole {
		return
	}
	if _, ok := n.entries[name]; ok {
		return
	}
	if n.entries == nil {
		n.entries = map[string]bool{}
	}
	n.entries[name] = true
	s.total++
}

// maskWhole masks the folder dir whole. It reports false when dir cannot
// be folded (an anchor or a folder above one): the caller must then fail.
func (s *maskSet) maskWhole(dir string) bool {
	n := s.node(dir)
	if n == nil || n.whole {
		return true
	}
	if s.pinned[dir] {
		return false
	}
	s.total += 1 - n.masks()
	s.collapse(n)
	return true
}

// covered reports whether dir lies in a folder masked whole.
func (s *maskSet) covered(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		if n := s.nodes[d]; n != nil {
			return n.whole
		}
		if d == "/" {
			return false
		}
	}
}

// masks counts the masks in n's subtree.
func (n *maskNode) masks() int {
	if n.whole {
		return 1
	}
	c := len(n.entries)
	for _, ch := range n.children {
		c += ch.masks()
	}
	return c
}

// collapse masks n whole and forgets what lies below it.
func (s *maskSet) collapse(n *maskNode) {
	var forget func(*maskNode)
	forget = func(m *maskNode) {
		for _, ch := range m.children {
			delete(s.nodes, ch.path)
			forget(ch)
		}
	}
	forget(n)
	n.children, n.entries, n.whole = nil, nil, true
}

// A folder's cost is the mounts its subtree needs in the helper: one per
// mask, and one per folder holding masks below it, which the helper pins
// (mount_pin_linux.go) when it lies in a writable root. A folder masked
// whole costs one.

// countAt returns the cost and the nodes of n's subtree once every
// foldable folder costing more than t (and more than one) is masked
// whole, deepest first.
func (n *maskNode) countAt(t int) (cost, nodes int) {
	if n.whole {
		return 1, 1
	}
	cost, nodes = len(n.entries)+1, 1
	for _, ch := range n.children {
		c, k := ch.countAt(t)
		cost, nodes = cost+c, nodes+k
	}
	if n.foldable && cost > t && cost > 1 {
		return 1, 1
	}
	return cost, nodes
}

// applyAt masks whole what countAt(t) counts as masked whole, and returns
// the cost left.
func (s *maskSet) applyAt(n *maskNode, t int) int {
	if n.whole {
		return 1
	}
	cost := len(n.entries) + 1
	for _, ch := range n.children {
		cost += s.applyAt(ch, t)
	}
	if n.foldable && cost > t && cost > 1 {
		s.collapse(n)
		return 1
	}
	return cost
}

// fold brings the cost to limit or less, if folding can: with t going
// down by a tenth from maxGlobMatches/2 to 1, the first t whose folding fits is
// applied (the folders costing more than t are masked whole), else t = 1,
// every foldable folder with more than one mask. It fails when what
// cannot be folded still costs more than maxGlobMasks.
func (s *maskSet) fold(limit int) error {
	root := s.nodes["/"]
	if c, k := root.countAt(math.MaxInt); c <= limit && k <= maxGlobNodes {
		return nil
	}
	t := maxGlobMatches / 2
	for ; t > 1; t = min(t-1, t*9/10) {
		if c, k := root.countAt(t); c <= limit && k <= maxGlobNodes/2 {
			break
		}
	}
	cost := s.applyAt(root, t)
	s.total = root.masks()
	if cost > maxGlobMasks {
		return preparef("deny-read globs match more than %d files and folders directly in %s, which cannot be masked whole: it is a root or the working folder of the command, or lies above one; remove the files or narrow the pattern", maxGlobMasks, s.crowded())
	}
	return nil
}

// crowded returns the folder holding the most masks itself.
func (s *maskSet) crowded() string {
	best, most := "", -1
	for p, n := range s.nodes {
		if c := len(n.entries) + len(n.children); c > most {
			best, most = p, c
		}
	}
	return best
}

// result folds the set to maxGlobMatches and returns the paths to mask:
// the matches and the folders masked whole.
func (s *maskSet) result() ([]string, error) {
	if err := s.fold(maxGlobMatches); err != nil {
		return nil, err
	}
	var out []string
	for p, n := range s.nodes {
		if n.whole {
			out = append(out, p)
		}
		for name := range n.entries {
			out = append(out, strings.TrimSuffix(p, "/")+"/"+name)
		}
	}
	return out, nil
}
