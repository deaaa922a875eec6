package wire

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/codexec/codex/rpc"
)

// This file holds the shapes of environmentConfig/read (docs/protocol.md
// §6.14) and the names of the capability flags of environmentInfo
// (§6.3).

// MethodEnvironmentConfigRead reads the configuration layers of the
// executor host.
const MethodEnvironmentConfigRead = "environmentConfig/read"

// Capability flags of environmentInfo.capabilities, in the reference's
// order. A server sets a flag only when it serves what the flag stands for:
// the client keys its behaviour on them.
const (
	CapNetworkProxyLaunch                          = "networkProxyLaunch"
	CapNetworkProxyReviewDomains                   = "networkProxyReviewDomains"
	CapCredentialMasking                           = "credentialMasking"
	CapCredentialMaskingCustomProviders            = "credentialMaskingCustomProviders"
	CapCapabilityDiscoverySandbox                  = "capabilityDiscoverySandbox"
	CapFSWatchMissing                              = "fsWatchMissing"
	CapCapabilityDiscoveryV2                       = "capabilityDiscoveryV2"
	CapEnvironmentConfigRead                       = "environmentConfigRead"
	CapHTTPHeaderEnvVars                           = "httpHeaderEnvVars"
	CapSandboxedFileStreaming                      = "sandboxedFileStreaming"
	CapFileWriteStreaming                          = "fileWriteStreaming"
	CapShellSnapshotV2                             = "shellSnapshotV2"
	CapWindowsMxc                                  = "windowsMxc"
	CapLinuxRootWritePreservesDevices              = "linuxRootWritePreservesDevices"
	CapLinuxApprovedRootWritePreservesRestrictions = "linuxApprovedRootWritePreservesRestrictions"
)

// EnvironmentConfigReadParams is the params of environmentConfig/read. A
// key path is a non-empty list of keys, ["mcp_servers"] or
// ["features","foo"].
type EnvironmentConfigReadParams struct {
	Cwd               Path       `json:"cwd" rpc:"required"`
	ConfigPaths       [][]string `json:"configPaths" rpc:"required"`
	RequirementsPaths [][]string `json:"requirementsPaths" rpc:"required"`
}

// EnvironmentConfigReadResult is the result of environmentConfig/read.
type EnvironmentConfigReadResult struct {
	UserHomeDir  string       `json:"userHomeDir"`
	CodexHomeDir string       `json:"codexHomeDir"`
	Hostname     string       `json:"hostname"`
	Config       ConfigLayers `json:"config"`
	Requirements ConfigLayers `json:"requirements"`
}

// ConfigLayers is a stack of layers, lowest precedence first.
// CloudInsertionIndex is where layers fetched from the cloud would go:
// after the host's system layers.
type ConfigLayers struct {
	Layers              []ConfigLayer `json:"layers"`
	CloudInsertionIndex int           `json:"cloudInsertionIndex"`
}

// ConfigLayer is one file cut to the requested key paths: Source names it
// ("system (<path>)", "user (<path>)", "project (<path>)", "legacy
// managed_config.toml (<path>)", the bare path of a requirements file), BaseDir is its folder as a URI,
// TOML the cut text.
type ConfigLayer struct {
	Source  string `json:"source"`
	BaseDir string `json:"baseDir"`
	TOML    string `json:"toml"`
}

// DecodeEnvironmentConfigReadParams decodes the params of
// environmentConfig/read with the reference's texts: the members are taken
// in the order they arrive, the first bad one failing ("invalid type:
// number, expected a string"), then a missing one ("missing field `cwd`");
// params that are not an object are refused naming the struct, except an
// array of the three members in order, which the reference also takes.
func DecodeEnvironmentConfigReadParams(raw json.RawMessage) (*EnvironmentConfigReadParams, error) {
	const name = "EnvironmentConfigReadParams"
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	fields := []string{"cwd", "configPaths", "requirementsPaths"}
	members := map[string]json.RawMessage{}
	var order []string
	switch raw[0] {
	case '{':
		var err error
		if order, err = objectMembersInto(raw, members); err != nil {
			return nil, err
		}
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "%s", err)
		}
		if len(elems) != len(fields) {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid length %d, expected struct %s with %d elements", len(elems), name, len(fields))
		}
		for i, f := range fields {
			members[f] = elems[i]
			order = append(order, f)
		}
	default:
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected struct %s", unexpected(raw), name)
	}
	p := &EnvironmentConfigReadParams{}
	for _, key := range order {
		v := members[key]
		var err error
		switch key {
		case "cwd":
			var s string
			if s, err = keyString(v); err == nil {
				p.Cwd, err = ParsePath(s)
			}
		case "configPaths":
			p.ConfigPaths, err = decodeKeyPaths(v)
		case "requirementsPaths":
			p.RequirementsPaths, err = decodeKeyPaths(v)
		}
		if err != nil {
			return nil, err
		}
	}
	for _, f := range fields {
		if _, ok := members[f]; !ok {
			return nil, rpc.Errorf(rpc.CodeInvalidParams, "missing field `%s`", f)
		}
	}
	return p, nil
}

// decodeKeyPaths decodes a list of key paths; an empty key path is left to
// the method to refuse.
func decodeKeyPaths(raw json.RawMessage) ([][]string, error) {
	outer, err := keySequence(raw)
	if err != nil {
		return nil, err
	}
	paths := make([][]string, len(outer))
	for i, e := range outer {
		inner, err := keySequence(e)
		if err != nil {
			return nil, err
		}
		paths[i] = make([]string, len(inner))
		for j, seg := range inner {
			if paths[i][j], err = keyString(seg); err != nil {
				return nil, err
			}
		}
	}
	return paths, nil
}

func keySequence(raw json.RawMessage) ([]json.RawMessage, error) {
	var elems []json.RawMessage
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected a sequence", unexpected(raw))
	}
	return elems, nil
}

func keyString(raw json.RawMessage) (string, error) {
	var s string
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected a string", unexpected(raw))
	}
	return s, nil
}

// unexpected names a JSON value as the reference's decoder does in its
// "invalid type" errors: strings and booleans with their value, numbers
// without.
func unexpected(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	switch raw[0] {
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		return "string " + strconv.Quote(rpc.Clip(s))
	case 't', 'f':
		return "boolean `" + string(raw) + "`"
	case 'n':
		return "null"
	case '{':
		return "map"
	case '[':
		return "sequence"
	}
	return "number"
}
