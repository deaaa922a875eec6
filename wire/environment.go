package wire

// This file holds the shapes of environmentConfig/read (docs/protocol.md
// §6.13) and the names of the capability flags of environmentInfo
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
// CloudInsertionIndex is where layers fetched from the cloud would go; no
// executor has any, so it is 0.
type ConfigLayers struct {
	Layers              []ConfigLayer `json:"layers"`
	CloudInsertionIndex int           `json:"cloudInsertionIndex"`
}

// ConfigLayer is one file cut to the requested key paths: Source names it
// ("user (<path>)", "project (<path>)"), BaseDir is its folder as a URI,
// TOML the cut text.
type ConfigLayer struct {
	Source  string `json:"source"`
	BaseDir string `json:"baseDir"`
	TOML    string `json:"toml"`
}
