package execserver

import (
	"context"
	"os"
	"path/filepath"

	"github.com/codexec/codex/config"
	"github.com/codexec/codex/rpc"
	"github.com/codexec/codex/wire"
)

// environmentConfigReadDecoded decodes the params with the reference's
// texts (they win over the handshake check, docs/protocol.md §5.1), then
// answers.
func environmentConfigReadDecoded(ctx context.Context, h *connHandler, req *rpc.Request) (any, error) {
	p, err := wire.DecodeEnvironmentConfigReadParams(req.Params)
	if err != nil {
		return nil, err
	}
	if err := h.check("environment config"); err != nil {
		return nil, err
	}
	return environmentConfigRead(ctx, h, req, p)
}

// environmentConfigRead answers environmentConfig/read (docs/protocol.md
// §6.14): the configuration layers of this host that apply to cwd, cut to
// the requested key paths. The executor has no cloud layers.
func environmentConfigRead(_ context.Context, _ *connHandler, _ *rpc.Request, p *wire.EnvironmentConfigReadParams) (any, error) {
	if len(p.ConfigPaths) == 0 && len(p.RequirementsPaths) == 0 {
		return nil, rpc.Errorf(rpc.CodeInvalidParams, "at least one config or requirements path is required")
	}
	for _, paths := range [][][]string{p.ConfigPaths, p.RequirementsPaths} {
		for _, path := range paths {
			if len(path) == 0 {
				return nil, rpc.Errorf(rpc.CodeInvalidParams, "TOML paths must contain at least one key segment")
			}
		}
	}
	codexHome, err := config.Home()
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInternalError, "failed to find Codex home: %s", err)
	}
	layers, err := config.ReadLayers(codexHome, p.Cwd.Native, p.ConfigPaths, p.RequirementsPaths)
	if err != nil {
		return nil, rpc.Errorf(rpc.CodeInternalError, "failed to load executor-local config: %s", err)
	}
	home, _ := os.UserHomeDir()
	hostname, _ := os.Hostname()
	res := wire.EnvironmentConfigReadResult{
		UserHomeDir:  uri(home),
		CodexHomeDir: uri(codexHome),
		Hostname:     hostname,
		Config:       wireLayers(layers.Config, layers.ConfigCloudIndex),
		Requirements: wireLayers(layers.Requirements, layers.RequirementsCloudIndex),
	}
	return res, nil
}

func wireLayers(ls []config.Layer, cloudIndex int) wire.ConfigLayers {
	out := wire.ConfigLayers{Layers: make([]wire.ConfigLayer, len(ls)), CloudInsertionIndex: cloudIndex}
	for i, l := range ls {
		out.Layers[i] = wire.ConfigLayer{Source: l.Source, BaseDir: wire.FileURI(l.BaseDir), TOML: l.TOML}
	}
	return out
}

// uri is the file URI of an absolute path, "" for anything else.
func uri(path string) string {
	if !filepath.IsAbs(path) {
		return ""
	}
	return wire.FileURI(path)
}
