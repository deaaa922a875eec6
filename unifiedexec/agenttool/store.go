package agenttool

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Store limits (docs/client.md §2, §9).
const (
	MaxProcesses           = 64
	WarningProcesses       = 60
	protectedRecentEntries = 8
)

// storeEntry is one live unified-exec process (docs/client.md §9).
type storeEntry struct {
	id       int
	proc     *execProcess
	call     *callInfo
	tty      bool
	start    time.Time
	lastUsed time.Time // guarded by processStore.mu
	writes   int       // guarded by processStore.mu; the last writeId
	endOnce  sync.Once
}

// processStore maps model-visible ids to processes and tracks the reserved
// ids. All methods are safe for concurrent use.
type processStore struct {
	mu            sync.Mutex
	entries       map[int]*storeEntry
	reserved      map[int]struct{}
	deterministic bool
}

func newProcessStore(deterministic bool) *processStore {
	return &processStore{
		entries:       map[int]*storeEntry{},
		reserved:      map[int]struct{}{},
		deterministic: deterministic,
	}
}

// reserve picks and reserves a new id (docs/client.md §4.4): uniformly random in
// [1000, 100000) until unused, or max(max(reserved), 999) + 1 in
// deterministic mode.
func (s *processStore) reserve() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var id int
	if s.deterministic {
		id = 999
		for r := range s.reserved {
			id = max(id, r)
		}
		id++
	} else {
		for {
			id = 1000 + rand.IntN(99000)
			if _, used := s.reserved[id]; !used {
				break
			}
		}
	}
	s.reserved[id] = struct{}{}
	return id
}

// release forgets id: it leaves both the reserved set and the store.
func (s *processStore) release(id int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.reserved, id)
	delete(s.entries, id)
}

// insert stores e. If the store already held MaxProcesses entries, it
// removes and returns exactly one entry to prune. It also returns the
// number of entries after the insert.
func (s *processStore) insert(e *storeEntry) (pruned *storeEntry, count int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.entries) >= MaxProcesses {
		cands := make([]pruneCandidate, 0, len(s.entries))
		for id, x := range s.entries {
			cands = append(cands, pruneCandidate{ID: id, LastUsed: x.lastUsed, Exited: x.proc.hasExited()})
		}
		if id, ok := pickPrune(cands); ok {
			pruned = s.entries[id]
			delete(s.entries, id)
			delete(s.reserved, id)
		}
	}
	s.entries[e.id] = e
	return pruned, len(s.entries)
}

// lookup returns the entry for id and marks it used now.
func (s *processStore) lookup(id int, now time.Time) (*storeEntry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[id]
	if ok {
		e.lastUsed = now
	}
	return e, ok
}

// contains reports whether e is still the entry stored under its id.
func (s *processStore) contains(e *storeEntry) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entries[e.id] == e
}

// nextWriteID returns the entry's next writeId: "1", "2", …
func (s *processStore) nextWriteID(e *storeEntry) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.writes++
	return strconv.Itoa(e.writes)
}

// drain empties the store and the reserved set, returning the entries.
func (s *processStore) drain() []*storeEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*storeEntry, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, e)
	}
	clear(s.entries)
	clear(s.reserved)
	return out
}

// len returns the number of stored entries.
func (s *processStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// pruneCandidate is what pruning needs to know about an entry.
type pruneCandidate struct {
	ID       int
	LastUsed time.Time
	Exited   bool
}

// pickPrune chooses the entry to prune (docs/client.md §9): the 8 most recently used are
// protected; among the rest, in LRU order, the first exited one, else the
// least recently used one. Ties are broken by id.
func pickPrune(cands []pruneCandidate) (int, bool) {
	sorted := slices.Clone(cands)
	slices.SortFunc(sorted, func(a, b pruneCandidate) int {
		if c := a.LastUsed.Compare(b.LastUsed); c != 0 {
			return c
		}
		return a.ID - b.ID
	})
	unprotected := sorted[:max(len(sorted)-protectedRecentEntries, 0)]
	for _, c := range unprotected {
		if c.Exited {
			return c.ID, true
		}
	}
	if len(unprotected) > 0 {
		return unprotected[0].ID, true
	}
	return 0, false
}

// processCountWarning is the model-visible warning of docs/client.md §9.
func processCountWarning(n int) string {
	return fmt.Sprintf("The maximum number of unified exec processes you can keep open is %d and you currently have %d processes open. Reuse older processes or close them to prevent automatic pruning of old processes", WarningProcesses, n)
}
