// The result types of a bench run: what is measured for one server.

package main

import (
	"time"
)

// ServerResult is everything measured for one server.
type ServerResult struct {
	Server  string            `json:"server"` // "ours" or "reference"
	Binary  string            `json:"binary"`
	Version string            `json:"version"`
	URL     string            `json:"url"`
	Machine Machine           `json:"machine"`
	Metrics Metrics           `json:"metrics"`
	Checks  Checks            `json:"checks"`
	Errors  map[string]string `json:"errors,omitempty"`
}

// Metrics are docs/benchmarking.md §3 #1–#11.
type Metrics struct {
	SpawnPipe            *Latency        `json:"spawn_latency_pipe,omitempty"`      // #1 tty:false
	SpawnPTY             *Latency        `json:"spawn_latency_pty,omitempty"`       // #1 tty:true
	CompletionPipe       *Latency        `json:"completion_latency_pipe,omitempty"` // #2 tty:false
	CompletionPTY        *Latency        `json:"completion_latency_pty,omitempty"`  // #2 tty:true
	FirstByte            *Latency        `json:"first_byte_latency,omitempty"`      // #3
	PipeThroughput       *Throughput     `json:"pipe_throughput,omitempty"`         // #4
	PTYThroughput        *Throughput     `json:"pty_throughput,omitempty"`          // #5
	Concurrency          []*Concurrency  `json:"concurrency,omitempty"`             // #6
	MemoryPipe           *Memory         `json:"memory_idle_pipe,omitempty"`        // #7 pipes
	MemoryPTY            *Memory         `json:"memory_idle_pty,omitempty"`         // #7 PTY
	SlowConsumer         *SlowConsumer   `json:"slow_consumer,omitempty"`           // #8
	TailPTY              *Tail           `json:"tail_completeness_pty,omitempty"`   // #9 tty:true
	TailPipe             *Tail           `json:"tail_completeness_pipe,omitempty"`  // #9 tty:false
	Metadata             *Latency        `json:"metadata_rtt,omitempty"`            // #10
	SandboxSpawn         *Latency        `json:"sandboxed_spawn_latency,omitempty"` // #11 workspace-write, tty:false
	SandboxClosed        *Latency        `json:"sandboxed_completion_latency,omitempty"`
	SandboxWrite         *Latency        `json:"sandboxed_fs_write_latency,omitempty"`
	ExecRun              *Latency        `json:"exec_run_true,omitempty"`             // `codex exec run -- /bin/true` wall time (ours only)
	ClientThroughput     *ClientRate     `json:"client_throughput,omitempty"`         // `codex exec run -- head -c 512M /dev/zero | wc -c` (ours only)
	StallMany            *StallMany      `json:"stall_many,omitempty"`                // robustness: 50 writers, stalled client
	ReadFileMem          *ReadFileMem    `json:"readfile_memory,omitempty"`           // robustness: 200 MiB fs/readFile
	ReadFileMemSandboxed *ReadFileMem    `json:"readfile_memory_sandboxed,omitempty"` // the same through the sandboxed fs helper
	Cycles               *Cycles         `json:"connect_cycles,omitempty"`            // robustness: connect → start → drop (ours only)
	HandleRead           *HandleStream   `json:"handle_read,omitempty"`               // 256 MiB through fs/readBlock
	HandleWrite          *HandleStream   `json:"handle_write,omitempty"`              // 256 MiB through fs/writeBlock
	CmdExec              *CmdExecMetrics `json:"command_exec,omitempty"`              // command/exec over stdio (ours: exec-server, ref: app-server)
	Walk                 *Latency        `json:"fs_walk,omitempty"`                   // #16 fs/walk of 100,000 entries in five calls
	HTTP                 *HTTPMetrics    `json:"http_request,omitempty"`              // http/request of a 100 MiB body over stdio
	Proxy                *ProxyMetrics   `json:"network_proxy,omitempty"`             // the managed network proxy in a test bed, over stdio
	Fairness             []*Fairness     `json:"fairness,omitempty"`                  // K output streams on one connection
	Teardown             *Teardown       `json:"teardown,omitempty"`                  // terminate-all of N idle processes
	PTYPaired            *PTYPaired      `json:"pty_paired,omitempty"`                // paired PTY throughput rounds (all subjects)
	Scale                *Scale          `json:"scale,omitempty"`                     // cost against N processes, C connections, K streams
}

// Checks are the correctness observations made on every run (docs/benchmarking.md §3, end).
type Checks struct {
	ExitCodeErrors    int      `json:"exit_code_errors"`
	ExitCodeNotes     []string `json:"exit_code_notes,omitempty"`
	OutputAfterClosed int64    `json:"output_after_closed"`
	SeqDisorder       int64    `json:"seq_disorder"`
	ExitedAfterClosed int64    `json:"exited_after_closed"`
	MissingExited     int64    `json:"closed_without_exited"`
	Stray             int64    `json:"stray_notifications"`
	RetainedBytes     *int64   `json:"retained_bytes_after_large_run,omitempty"` // process/read after the first pipe throughput run
	Reconnects        int      `json:"reconnects,omitempty"`
	Notes             []string `json:"notes,omitempty"` // descriptions of the first anomalies
	StopStatus        string   `json:"stop_status"`     // how the server ended on SIGTERM
}

// ThroughputRun is one throughput measurement.
type ThroughputRun struct {
	MiBps      float64 `json:"mib_s"`
	Seconds    float64 `json:"seconds"`
	Bytes      int64   `json:"bytes"`
	Chunks     int     `json:"chunks,omitempty"`
	AvgChunk   float64 `json:"avg_chunk_bytes,omitempty"`
	OK         bool    `json:"ok"`
	FirstError string  `json:"error,omitempty"`
}

func newRun(bytes int64, d time.Duration, chunks int, ok bool) ThroughputRun {
	r := ThroughputRun{Seconds: round3(d.Seconds()), Bytes: bytes, Chunks: chunks, OK: ok}
	if d > 0 {
		r.MiBps = round3(float64(bytes) / (1 << 20) / d.Seconds())
	}
	if chunks > 0 {
		r.AvgChunk = round3(float64(bytes) / float64(chunks))
	}
	return r
}

// Throughput summarises throughput runs (median of the runs).
type Throughput struct {
	Command string          `json:"command"`
	Size    int64           `json:"size_bytes"`
	MiBps   float64         `json:"median_mib_s"`
	Min     float64         `json:"min_mib_s"`
	Max     float64         `json:"max_mib_s"`
	Runs    []ThroughputRun `json:"runs"`
	Failed  int             `json:"failed_runs,omitempty"`
	Error   string          `json:"error,omitempty"`
}

func (t *Throughput) add(r ThroughputRun) {
	t.Runs = append(t.Runs, r)
	var v []float64
	for _, x := range t.Runs {
		if x.OK {
			v = append(v, x.MiBps)
		}
	}
	t.Failed = len(t.Runs) - len(v)
	if len(v) == 0 {
		return
	}
	t.MiBps = round3(median(v))
	t.Min, t.Max = v[0], v[0]
	for _, x := range v {
		t.Min = min(t.Min, x)
		t.Max = max(t.Max, x)
	}
}

// Durations summarises repeated wall-clock durations in seconds.
type Durations struct {
	Runs   []float64 `json:"runs_s"`
	Median float64   `json:"median_s"`
	Min    float64   `json:"min_s"`
	Max    float64   `json:"max_s"`
	Errors int       `json:"errors,omitempty"`
	Error  string    `json:"error,omitempty"`
}

func (d *Durations) add(v time.Duration) {
	d.Runs = append(d.Runs, round3(v.Seconds()))
	d.Median = round3(median(d.Runs))
	d.Min, d.Max = d.Runs[0], d.Runs[0]
	for _, x := range d.Runs {
		d.Min = min(d.Min, x)
		d.Max = max(d.Max, x)
	}
}

// Concurrency is #6 for one K and one mode.
type Concurrency struct {
	K    int    `json:"k"`
	Mode string `json:"mode"` // one_connection, k_connections, one_connection_cr32
	Durations
}

// Memory is #7 for one mode.
type Memory struct {
	K               int            `json:"k"`
	TTY             bool           `json:"tty"`
	Before          ProcStatus     `json:"before"`
	With            ProcStatus     `json:"with_children"`
	After           ProcStatus     `json:"after_terminate"`
	KiBPerChild     float64        `json:"kib_per_child"`
	FDsPerChild     float64        `json:"fds_per_child"`
	ThreadsPerChild float64        `json:"threads_per_child"`
	TerminatedOK    int            `json:"terminated_exit_137"`
	ExitCodes       map[string]int `json:"terminated_exit_codes"` // exit code → count after process/terminate
	Error           string         `json:"error,omitempty"`
}

// SlowSample is one sample taken while the client is not reading.
type SlowSample struct {
	T          float64 `json:"t_s"`
	RSSKiB     int64   `json:"server_rss_kib"`
	ChildState string  `json:"child_state"`
	ChildWchar int64   `json:"child_wchar"`
}

// SlowConsumer is #8.
type SlowConsumer struct {
	StallSeconds   float64      `json:"stall_s"`
	BaseRSSKiB     int64        `json:"base_rss_kib"`
	MaxGrowthKiB   int64        `json:"max_rss_growth_kib"`
	ChildPid       int          `json:"child_pid"`
	ChildBlocked   bool         `json:"child_blocked"`
	Samples        []SlowSample `json:"samples"`
	Bytes          int64        `json:"bytes"`
	Expected       int64        `json:"expected_bytes"`
	DrainSeconds   float64      `json:"drain_after_resume_s"`
	ExitCodeOK     bool         `json:"exit_code_ok"`
	Pass           bool         `json:"pass"`
	ChildNotFound  bool         `json:"child_not_found,omitempty"`
	SamplingErrors int          `json:"sampling_errors,omitempty"`
	Error          string       `json:"error,omitempty"`
}

// Tail is #9 for one mode.
type Tail struct {
	TTY        bool    `json:"tty"`
	Runs       int     `json:"runs"`
	Complete   int     `json:"complete"`
	Fraction   float64 `json:"fraction"`
	Incomplete []int64 `json:"incomplete_byte_counts,omitempty"`
	Errors     int     `json:"errors,omitempty"`
	Error      string  `json:"error,omitempty"`
}
