package proc

// Limits are resource limits applied to the cgroup leaf of every process
// (docs/operations.md §4: a fork bomb or a runaway allocation inside one command must
// not take the host down). The zero value limits nothing.
type Limits struct {
	// MaxPids is pids.max of each leaf: the tasks (processes and threads)
	// a command and all its descendants may have at once; 0: no limit.
	MaxPids int64
	// MaxMemory is memory.max of each leaf in bytes; 0: no limit.
	MaxMemory int64
}
