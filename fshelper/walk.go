package fshelper

// WalkOptions are the budgets and rules of Walk (wire.WalkOptions).
type WalkOptions struct {
	MaxDepth, MaxDirectories, MaxEntries            uint64
	FollowDirectorySymlinks, PruneHiddenDirectories bool
}

// WalkResult is what Walk found.
type WalkResult struct {
	Entries   []WalkEntry
	Errors    []WalkFailure
	Truncated bool
}

// WalkEntry is one listed file or directory, by its native path.
type WalkEntry struct {
	Path      string
	Directory bool
}

// WalkFailure is a directory that could not be read or an entry whose type
// could not be read.
type WalkFailure struct {
	Path string
	Err  error
}
