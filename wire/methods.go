package wire

// Method names of the exec-server (docs/protocol.md §6). Requests unless noted.
const (
	MethodInitialize        = "initialize"
	MethodInitialized       = "initialized" // notification, client → server
	MethodEnvironmentInfo   = "environment/info"
	MethodEnvironmentStatus = "environment/status"

	MethodProcessStart      = "process/start"
	MethodProcessRead       = "process/read"
	MethodProcessWrite      = "process/write"
	MethodProcessCloseStdin = "process/closeStdin"
	MethodProcessSignal     = "process/signal"
	MethodProcessTerminate  = "process/terminate"
	MethodProcessResize     = "process/resize"

	MethodSessionEnd = "session/end" // [ext] docs/protocol.md §10.5

	MethodProcessOutput = "process/output" // notification, server → client
	MethodProcessExited = "process/exited" // notification, server → client
	MethodProcessClosed = "process/closed" // notification, server → client

	MethodFSReadFile        = "fs/readFile"
	MethodFSWriteFile       = "fs/writeFile"
	MethodFSCreateDirectory = "fs/createDirectory"
	MethodFSGetMetadata     = "fs/getMetadata"
	MethodFSReadDirectory   = "fs/readDirectory"
	MethodFSRemove          = "fs/remove"
	MethodFSCopy            = "fs/copy"
	MethodFSCanonicalize    = "fs/canonicalize"
)

// Streams of process/output.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
	StreamPTY    = "pty"
)
