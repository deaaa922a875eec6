package wire

import (
	"reflect"
)

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

// Direction tells which side sends a message.
type Direction int

// Directions of a method: a request is sent by one side and answered by
// the other (every request but network/policyRequest by the client); a
// notification goes one way.
const (
	ClientToServer Direction = iota
	ServerToClient
)

// MethodSpec ties one method name to the Go types of its JSON shapes. A nil
// Params means the method takes no params (absent, null or {}); a nil Result
// marks a notification. Extension, for a method the reference does not
// serve, is the section of docs/protocol.md that describes it ("§10.5").
type MethodSpec struct {
	Name         string
	Notification bool
	From         Direction
	Params       reflect.Type
	Result       reflect.Type
	Extension    string
}

// Positional is implemented by a params struct (or one nested in params)
// that is also accepted as an array of its members in field order, as
// serde takes a struct: at least PositionalMin of them (the members after
// those have defaults). The JSON Schema describes both forms.
type Positional interface {
	PositionalMin() int
}

// ReadFileResult is the JSON shape of the fs/readFile result. The server
// streams it as a Base64Result instead of encoding this type.
type ReadFileResult struct {
	DataBase64 Bytes `json:"dataBase64"`
}

func request[P, R any](name string) MethodSpec {
	return MethodSpec{Name: name, Params: reflect.TypeFor[P](), Result: reflect.TypeFor[R]()}
}

// serverRequest is a request the server sends and the client answers.
func serverRequest[P, R any](name string) MethodSpec {
	m := request[P, R](name)
	m.From = ServerToClient
	return m
}

func requestNoParams[R any](name string) MethodSpec {
	return MethodSpec{Name: name, Result: reflect.TypeFor[R]()}
}

// extension marks m as an extension described in section of docs/protocol.md.
func extension(m MethodSpec, section string) MethodSpec {
	m.Extension = section
	return m
}

func notification[P any](name string, from Direction) MethodSpec {
	return MethodSpec{Name: name, Notification: true, From: from, Params: reflect.TypeFor[P]()}
}

// Methods returns every method of the protocol with its params and result
// types (a request's result goes the other way), in the order of docs/protocol.md §6: the one table the JSON Schema is
// generated from. A test holds it to the Method constants of this package.
func Methods() []MethodSpec {
	return []MethodSpec{
		request[InitializeParams, InitializeResult](MethodInitialize),
		{Name: MethodInitialized, Notification: true, From: ClientToServer},
		requestNoParams[EnvironmentInfo](MethodEnvironmentInfo),
		requestNoParams[StatusResult](MethodEnvironmentStatus),
		request[EnvironmentConfigReadParams, EnvironmentConfigReadResult](MethodEnvironmentConfigRead),

		request[StartParams, StartResult](MethodProcessStart),
		request[ReadParams, ReadResult](MethodProcessRead),
		request[WriteParams, WriteResult](MethodProcessWrite),
		extension(request[ProcessIDParams, WriteResult](MethodProcessCloseStdin), "§10.2"),
		request[SignalParams, EmptyResult](MethodProcessSignal),
		request[TerminateParams, TerminateResult](MethodProcessTerminate),
		extension(request[ResizeParams, EmptyResult](MethodProcessResize), "§10.1"),
		extension(requestNoParams[EmptyResult](MethodSessionEnd), "§10.5"),
		notification[OutputParams](MethodProcessOutput, ServerToClient),
		notification[ExitedParams](MethodProcessExited, ServerToClient),
		notification[ClosedParams](MethodProcessClosed, ServerToClient),

		request[ReadFileParams, ReadFileResult](MethodFSReadFile),
		request[WriteFileParams, EmptyResult](MethodFSWriteFile),
		request[CreateDirectoryParams, EmptyResult](MethodFSCreateDirectory),
		request[GetMetadataParams, MetadataResult](MethodFSGetMetadata),
		request[ReadDirectoryParams, ReadDirectoryResult](MethodFSReadDirectory),
		request[RemoveParams, EmptyResult](MethodFSRemove),
		request[CopyParams, EmptyResult](MethodFSCopy),
		request[CanonicalizeParams, CanonicalizeResult](MethodFSCanonicalize),
		request[WatchMissingParams, WatchMissingResult](MethodFSWatchMissing),
		notification[MissingChangedParams](MethodFSMissingChanged, ServerToClient),
		request[WalkParams, WalkResult](MethodFSWalk),
		request[DiscoverV2Params, DiscoverV2Result](MethodCapabilitiesDiscoverV2),
		request[OpenParams, OpenResult](MethodFSOpen),
		request[ReadBlockParams, ReadBlockResult](MethodFSReadBlock),
		request[WriteBlockParams, EmptyResult](MethodFSWriteBlock),
		request[CloseParams, EmptyResult](MethodFSClose),

		request[HTTPRequestParams, HTTPRequestResult](MethodHTTPRequest),
		notification[HTTPBodyDeltaParams](MethodHTTPBodyDelta, ServerToClient),

		request[CommandExecParams, CommandExecResult](MethodCommandExec),
		request[CommandExecWriteParams, EmptyResult](MethodCommandExecWrite),
		request[CommandExecResizeParams, EmptyResult](MethodCommandExecResize),
		request[CommandExecTerminateParams, EmptyResult](MethodCommandExecTerminate),
		notification[CommandExecOutputDelta](MethodCommandExecOutput, ServerToClient),

		serverRequest[NetworkPolicyRequestParams, NetworkPolicyResult](MethodNetworkPolicyRequest),
		notification[NetworkPolicyDecisionParams](MethodNetworkPolicyDecision, ServerToClient),
	}
}
