package cli

import "runtime/debug"

// version is set at link time by `make build`
// (-ldflags "-X github.com/codexec/codex/cli.version=..."); empty, the build information of the
// binary decides (see buildVersion).
var version string

// protocolVersion is the Codex CLI release whose exec-server protocol this
// binary speaks; environment/info reports it separately.
const protocolVersion = "0.169.0"

// buildVersion is the version of this binary: the link-time version when
// set, else the main module's version as the go command stamped it, else
// the VCS revision (12 digits, "-dirty" for a modified tree), else "devel".
func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionFromBuildInfo(info)
}

// versionFromBuildInfo is buildVersion's reading of the build information.
func versionFromBuildInfo(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// versionLine is what --version prints: one line.
func versionLine() string {
	return "codex " + buildVersion() + " (exec-server protocol " + protocolVersion + ")"
}
