package execserver

import (
	"context"
	"slices"
	"testing"

	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// TestCapabilityTable holds the table to the reference's 15 flags, in its
// order, each once; and a flag to its methods: on only when all of them
// are bound, whether in the method table or among the Binder's extra
// (fs/*) methods, and never for a flag that names none.
func TestCapabilityTable(t *testing.T) {
	want := []string{wire.CapNetworkProxyLaunch, wire.CapNetworkProxyReviewDomains, wire.CapCredentialMasking,
		wire.CapCredentialMaskingCustomProviders, wire.CapCapabilityDiscoverySandbox, wire.CapFSWatchMissing,
		wire.CapCapabilityDiscoveryV2, wire.CapEnvironmentConfigRead, wire.CapHTTPHeaderEnvVars,
		wire.CapSandboxedFileStreaming, wire.CapFileWriteStreaming, wire.CapShellSnapshotV2, wire.CapWindowsMxc,
		wire.CapLinuxRootWritePreservesDevices, wire.CapLinuxApprovedRootWritePreservesRestrictions}
	var got []string
	for _, c := range capabilities {
		got = append(got, c.flag)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("table flags %v, want %v", got, want)
	}

	b := &Binder{}
	flags := b.capabilityFlags(nil)
	if len(flags) != len(want) || !flags[wire.CapEnvironmentConfigRead] {
		t.Errorf("flags %v: want all 15, environmentConfigRead on", flags)
	}

	saved := capabilities
	defer func() { capabilities = saved }()
	capabilities = append(slices.Clone(saved), struct {
		flag    string
		methods []string
	}{"testFlag", []string{"fs/test", wire.MethodEnvironmentConfigRead}})
	if b.capabilityFlags(nil)["testFlag"] {
		t.Error("testFlag on while fs/test is not bound")
	}
	b.extra = map[string]rpc.HandlerFunc{"fs/test": func(context.Context, *rpc.Request) (any, error) { return nil, nil }}
	if !b.capabilityFlags(nil)["testFlag"] {
		t.Error("testFlag off while all its methods are bound")
	}
	for _, c := range saved {
		if len(c.methods) == 0 && b.capabilityFlags(nil)[c.flag] {
			t.Errorf("%s is on without methods", c.flag)
		}
	}
}
