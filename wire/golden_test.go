package wire_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"github.com/codexec/codex/wire"
)

func ptr[T any](v T) *T { return &v }

func mustPath(t *testing.T, s string) wire.Path {
	t.Helper()
	p, err := wire.ParsePath(s)
	if err != nil {
		t.Fatalf("ParsePath(%q): %v", s, err)
	}
	return p
}

// golden reads testdata/name without its trailing newline.
func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b, []byte("\n"))
}

// goldenValues pairs each fixture with the Go value it encodes.
func goldenValues(t *testing.T) map[string]any {
	return map[string]any{
		"initialize_params.json": &wire.InitializeParams{ClientName: "codex-environment"},
		"initialize_result.json": &wire.InitializeResult{
			SessionID: "39837159-a72c-498b-830d-d133671884c5",
			EnvironmentInfo: wire.EnvironmentInfo{
				Shell: wire.Shell{Name: "bash", Path: "/bin/bash"}, ExecutorVersion: "0.169.0",
				ProviderID: "sha256:2101b24c143ad7dd250ba28b0acfb89d51781d78d013ebcdb1fafdba63feb222",
				Cwd:        "file:///home/dev/proj", UserHomeDir: "file:///home/dev", PlatformOS: "linux",
				PrependPathDirs:      []string{"file:///opt/codex/vendor/x86_64-unknown-linux-musl/codex-path"},
				TemporaryDirectories: []string{}, TempDir: "file:///tmp",
				Capabilities: map[string]bool{wire.CapEnvironmentConfigRead: true, wire.CapFSWatchMissing: false, wire.CapWindowsMxc: false},
			},
		},
		"environment_config_read_params.json": &wire.EnvironmentConfigReadParams{
			Cwd: mustPath(t, "file:///home/dev/repo/pkg"), ConfigPaths: [][]string{{"mcp_servers"}}, RequirementsPaths: [][]string{{"mcp_servers"}},
		},
		"environment_config_read_result.json": &wire.EnvironmentConfigReadResult{
			UserHomeDir: "file:///home/dev", CodexHomeDir: "file:///home/dev/.codex", Hostname: "vm",
			Config: wire.ConfigLayers{Layers: []wire.ConfigLayer{{
				Source: "user (/home/dev/.codex/config.toml)", BaseDir: "file:///home/dev/.codex",
				TOML: "[mcp_servers.u]\ncommand = \"u\"\nargs = [\"a\", \"b\"]\n",
			}}},
			Requirements: wire.ConfigLayers{Layers: []wire.ConfigLayer{}},
		},
		"start_params.json": &wire.StartParams{
			ProcessID: "proc-1", Argv: []string{"bash", "-lc", `printf 'ready\n'`},
			Cwd: mustPath(t, "/tmp"), Env: map[string]string{"PATH": "/usr/bin:/bin"}, TTY: true,
			EnvPolicy: &wire.EnvPolicy{Inherit: "core", Exclude: []string{"AWS_*"}, Set: map[string]string{"A": "1"}, IncludeOnly: []string{}},
			Sandbox:   json.RawMessage("null"), ManagedNetwork: json.RawMessage("null"), NetworkProxy: nil,
			ShellSnapshot: json.RawMessage("null"), Metadata: json.RawMessage("null"),
			Size: &wire.Size{Rows: 24, Cols: 80},
		},
		"start_result.json": &wire.StartResult{ProcessID: "p1", SandboxType: "none"},
		"read_params.json":  &wire.ReadParams{ProcessID: "p1", AfterSeq: ptr[uint64](0), WaitMs: ptr[uint64](0)},
		"read_result.json": &wire.ReadResult{
			Chunks:  []wire.ReadChunk{{Seq: 1, Stream: "stdout", Chunk: wire.Bytes("out\n")}, {Seq: 2, Stream: "stderr", Chunk: wire.Bytes("err\n")}},
			NextSeq: 5, Exited: true, ExitCode: ptr(3), Closed: true,
		},
		"read_result_truncation.json": &wire.ReadResult{
			Chunks:  []wire.ReadChunk{{Seq: 242, Stream: "stdout", Chunk: wire.Bytes("out\n")}},
			NextSeq: 375, Exited: true, ExitCode: ptr(0), Closed: true,
			Truncated: ptr(true), FirstRetainedSeq: ptr[uint64](242), EvictedBytes: ptr[uint64](1957888), WithTruncation: true,
		},
		"read_result_truncation_empty.json": &wire.ReadResult{
			Chunks: []wire.ReadChunk{}, NextSeq: 1, Truncated: ptr(false), EvictedBytes: ptr[uint64](0), WithTruncation: true,
		},
		"write_params.json":       &wire.WriteParams{ProcessID: "p1", Chunk: wire.Bytes("hello\n"), WriteID: ptr("7"), CloseStdin: true},
		"write_result.json":       &wire.WriteResult{Status: wire.WriteAccepted},
		"signal_params.json":      &wire.SignalParams{ProcessID: "p1", Signal: "interrupt"},
		"terminate_params.json":   &wire.TerminateParams{ProcessID: "p1", Mode: &wire.TerminateMode{Type: "graceful", TimeoutMs: ptr[uint64](2000)}},
		"terminate_result.json":   &wire.TerminateResult{Running: true},
		"resize_params.json":      &wire.ResizeParams{ProcessID: "p1", Size: wire.Size{Rows: 40, Cols: 120}},
		"close_stdin_params.json": &wire.ProcessIDParams{ProcessID: "p1"},
		"status_result.json":      &wire.StatusResult{Status: "ready"},
		"fs_get_metadata_params.json": &wire.GetMetadataParams{
			Path: mustPath(t, "file:///home/dev/proj/.git"), Sandbox: json.RawMessage("null"),
		},
		"fs_metadata_result.json": &wire.MetadataResult{IsFile: true, Size: 6, CreatedAtMs: 1700000000000, ModifiedAtMs: 1700000000123},
		"fs_read_directory_result.json": &wire.ReadDirectoryResult{Entries: []wire.DirEntry{
			{FileName: "a.txt", IsFile: true}, {FileName: "sub", IsDirectory: true},
		}},
		"fs_write_file_params.json": &wire.WriteFileParams{
			Path: mustPath(t, "file:///home/dev/proj/a.txt"), DataBase64: ptr("YWxwaGEK"), Sandbox: json.RawMessage("null"),
		},
		"fs_create_directory_params.json": &wire.CreateDirectoryParams{
			Path: mustPath(t, "/home/dev/proj/sub/dir"), Recursive: ptr(true), FollowSymlinks: ptr(false), Sandbox: json.RawMessage("null"),
		},
		"fs_remove_params.json": &wire.RemoveParams{
			Path: mustPath(t, "file:///home/dev/proj/a.txt"), Recursive: ptr(false), Force: ptr(false), Sandbox: json.RawMessage("null"),
		},
		"fs_copy_params.json": &wire.CopyParams{
			SourcePath: mustPath(t, "/a"), DestinationPath: mustPath(t, "file:///b"), Recursive: ptr(true), Sandbox: json.RawMessage("null"),
		},
		"fs_canonicalize_result.json": &wire.CanonicalizeResult{Path: mustPath(t, "file:///home/dev/proj")},
		"error_not_found.json":        wire.OSError(wire.CodeNotFound, &os.PathError{Op: "stat", Path: "/x", Err: syscall.ENOENT}),
		"error_session_attached.json": wire.ErrSessionAlreadyAttached("s1"),
		"error_session_limit.json":    wire.ErrSessionLimitReached(256),
	}
}

// TestGoldenEncode holds encoding/json of every wire type to its fixture.
func TestGoldenEncode(t *testing.T) {
	for name, v := range goldenValues(t) {
		got, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := golden(t, name); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}

// TestGoldenDecode decodes every fixture into its type (as a client or the
// server does) and expects the value it was written from.
func TestGoldenDecode(t *testing.T) {
	for name, want := range goldenValues(t) {
		got := reflect.New(reflect.TypeOf(want).Elem()).Interface()
		if err := json.Unmarshal(golden(t, name), got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
		}
	}
}

// TestGoldenFixturesUsed keeps testdata and the tables in step.
func TestGoldenFixturesUsed(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	values := goldenValues(t)
	for _, f := range files {
		name := filepath.Base(f)
		if _, ok := values[name]; !ok && notificationFixtures[name] == nil {
			t.Errorf("fixture %s is not tested", name)
		}
	}
}
