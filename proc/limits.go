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

// MemoryCeiling is the most memory the server and its commands may use
// together: the smallest memory limit of the server's cgroup and its
// ancestors, or physical memory when no cgroup sets a smaller one
// (MemoryLimit). In a container that is the container's limit, not the
// host's RAM; a percentage of --max-memory-per-process is taken of it.
type MemoryCeiling struct {
	Bytes int64
	// Source is the control file that set Bytes (e.g.
	// /sys/fs/cgroup/memory.max), or "physical memory".
	Source string
}
