package sandbox

// ChildOptions composes the sandbox helper (ChildMain) with the parts of
// the binary it runs in-process. main builds it at its dispatch, so no
// package is wired by mutating another's globals. The zero value is a
// helper that runs commands only.
type ChildOptions struct {
	// FSHelper is the fs helper operation that the helper runs
	// in-process, after enforcement, for a plan with FSHelper set
	// (docs/sandbox.md §4.7): main passes fshelper.ChildMain. It returns the
	// exit status. If nil, such a plan fails with status 1 before anything
	// is enforced.
	FSHelper func() int
}
