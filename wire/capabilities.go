package wire

import (
	"bytes"
	"encoding/json"

	"github.com/codexec/codex/rpc"
)

// MethodCapabilitiesDiscoverV2 lists the skills and plugins installed on the
// executor's host (docs/protocol.md §6.15).
const MethodCapabilitiesDiscoverV2 = "capabilities/discoverV2"

// The discovery roots of skills, by the ids the reference gives them.
const (
	SkillRootCodexHome  = "codex-home-skills"
	SkillRootUserAgents = "user-agent-skills"
)

// DiscoverWarningIncomplete is the one warning the reference gives when a
// skill, or part of its metadata, could not be read.
const DiscoverWarningIncomplete = "some capability metadata could not be loaded; discovery may be incomplete"

// DiscoverV2Params is the params of capabilities/discoverV2. Decode it with
// DecodeDiscoverV2Params.
type DiscoverV2Params struct {
	Cwd     Path            `json:"cwd" rpc:"required"`
	Sandbox json.RawMessage `json:"sandbox"`
}

// DiscoverV2Result is the result of capabilities/discoverV2. Its slices are
// never nil.
type DiscoverV2Result struct {
	Plugins  []json.RawMessage `json:"plugins"`
	Skills   []Skill           `json:"skills"`
	Warnings []string          `json:"warnings"`
}

// Skill is one SKILL.md found under a discovery root.
type Skill struct {
	Name             string             `json:"name"`
	Description      string             `json:"description"`
	ShortDescription *string            `json:"shortDescription"`
	Path             string             `json:"path"`
	DiscoveryRoot    SkillRoot          `json:"discoveryRoot"`
	Dependencies     *SkillDependencies `json:"dependencies"`
	Policy           *SkillPolicy       `json:"policy"`
}

// SkillRoot is where a skill was found.
type SkillRoot struct {
	ID   string `json:"id"`
	Path string `json:"path"`
}

// SkillDependencies are the tools a skill's agents/openai.yaml declares.
type SkillDependencies struct {
	Tools []SkillTool `json:"tools"`
}

// SkillTool is one declared tool dependency.
type SkillTool struct {
	Type              string  `json:"type"`
	Value             string  `json:"value"`
	Description       *string `json:"description"`
	Transport         *string `json:"transport"`
	Command           *string `json:"command"`
	URL               *string `json:"url"`
	OAuthCallbackPort *uint16 `json:"oauthCallbackPort"`
}

// SkillPolicy is the policy of a skill's agents/openai.yaml.
type SkillPolicy struct {
	AllowImplicitInvocation *bool    `json:"allowImplicitInvocation"`
	Products                []string `json:"products"`
}

// DecodeDiscoverV2Params decodes the params as the reference does: an
// object or [cwd, sandbox?]; the sandbox an object or null.
func DecodeDiscoverV2Params(raw json.RawMessage) (DiscoverV2Params, error) {
	var p DiscoverV2Params
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	var cwd, sb json.RawMessage
	switch raw[0] {
	case '{':
		m, err := objectMap(raw)
		if err != nil {
			return p, err
		}
		var ok bool
		if cwd, ok = m["cwd"]; !ok {
			return p, rpc.Errorf(rpc.CodeInvalidParams, "missing field `cwd`")
		}
		sb = m["sandbox"]
	case '[':
		a, err := arrayItems(raw)
		if err != nil {
			return p, err
		}
		if len(a) == 0 {
			return p, rpc.Errorf(rpc.CodeInvalidParams, "invalid length 0, expected struct DiscoverV2CapabilitiesRequest with 2 elements")
		}
		if len(a) > 2 {
			return p, rpc.Errorf(rpc.CodeInvalidParams, "invalid length %d, expected fewer elements in array", len(a))
		}
		cwd = a[0]
		if len(a) == 2 {
			sb = a[1]
		}
	default:
		return p, rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected struct DiscoverV2CapabilitiesRequest", paramKind(raw))
	}
	if cwd[0] != '"' {
		return p, rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected a string", paramKind(cwd))
	}
	var err error
	if p.Cwd, err = decodeURI(cwd); err != nil {
		return p, err
	}
	if len(sb) > 0 && !isNull(sb) {
		if sb[0] != '{' {
			return p, rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected struct FileSystemSandboxContext", paramKind(sb))
		}
		p.Sandbox = sb
	}
	return p, nil
}
