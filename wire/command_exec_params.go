package wire

import (
	"encoding/json"
	"math"

	"github.com/codexec/codex/rpc"
)

// execField decodes one member of command/exec params into p.
type execField func(p *CommandExecParams, raw json.RawMessage) *rpc.Error

func boolField(get func(p *CommandExecParams) *bool) execField {
	return func(p *CommandExecParams, raw json.RawMessage) (err *rpc.Error) {
		*get(p), err = decodeBool(raw)
		return err
	}
}

var execFields = map[string]execField{
	"command": func(p *CommandExecParams, raw json.RawMessage) (err *rpc.Error) {
		p.Command, err = decodeCommand(raw)
		return err
	},
	"processId": func(p *CommandExecParams, raw json.RawMessage) (err *rpc.Error) {
		p.ProcessID, err = decodeOptString(raw, "a string")
		return err
	},
	"tty":                boolField(func(p *CommandExecParams) *bool { return &p.TTY }),
	"streamStdin":        boolField(func(p *CommandExecParams) *bool { return &p.StreamStdin }),
	"streamStdoutStderr": boolField(func(p *CommandExecParams) *bool { return &p.StreamStdoutStderr }),
	"disableOutputCap":   boolField(func(p *CommandExecParams) *bool { return &p.DisableOutputCap }),
	"disableTimeout":     boolField(func(p *CommandExecParams) *bool { return &p.DisableTimeout }),
	"outputBytesCap": func(p *CommandExecParams, raw json.RawMessage) *rpc.Error {
		if isNull(raw) {
			return nil
		}
		_, u, err := decodeInt(raw, 0, math.MaxUint64, "usize")
		p.OutputBytesCap = &u
		return err
	},
	"timeoutMs": func(p *CommandExecParams, raw json.RawMessage) *rpc.Error {
		if isNull(raw) {
			return nil
		}
		n, _, err := decodeInt(raw, math.MinInt64, math.MaxInt64, "i64")
		p.TimeoutMs = &n
		return err
	},
	"cwd": func(p *CommandExecParams, raw json.RawMessage) (err *rpc.Error) {
		p.Cwd, err = decodeOptString(raw, "path string")
		return err
	},
	"env": func(p *CommandExecParams, raw json.RawMessage) (err *rpc.Error) {
		p.Env, err = decodeEnv(raw)
		return err
	},
	"size": func(p *CommandExecParams, raw json.RawMessage) (err *rpc.Error) {
		p.Size, err = decodeSize(raw)
		return err
	},
	"sandboxPolicy": func(p *CommandExecParams, raw json.RawMessage) *rpc.Error {
		if isNull(raw) {
			return nil
		}
		if raw[0] != '{' {
			return typeErr(raw, "internally tagged enum SandboxPolicyDeserialize")
		}
		if err := rpcDecode(json.Unmarshal(raw, &p.SandboxPolicy)); err != nil {
			return err
		}
		return checkPolicyTag(p.SandboxPolicy)
	},
	"permissionProfile": func(p *CommandExecParams, raw json.RawMessage) (err *rpc.Error) {
		p.PermissionProfile, err = decodeOptString(raw, "a string")
		return err
	},
}

// checkPolicyTag accepts only the camelCase tags of 0.169.0 (docs/protocol.md §12.3).
func checkPolicyTag(policy map[string]any) *rpc.Error {
	tag, ok := policy["type"]
	if !ok {
		return ErrInvalidRequestDecode("missing field `type`")
	}
	switch t := tag.(type) {
	case string:
		switch t {
		case "dangerFullAccess", "readOnly", "externalSandbox", "workspaceWrite":
			return nil
		}
		return ErrInvalidRequestDecode("unknown variant `" + t + "`, expected one of `dangerFullAccess`, `readOnly`, `externalSandbox`, `workspaceWrite`")
	}
	raw, _ := json.Marshal(tag)
	return typeErr(raw, "variant identifier")
}

func rpcDecode(err error) *rpc.Error {
	if err != nil {
		return ErrInvalidRequestDecode(err.Error())
	}
	return nil
}

// DecodeCommandExecParams decodes command/exec params with the messages of
// docs/protocol.md §12.1 (all -32600 "Invalid request: …").
func DecodeCommandExecParams(raw json.RawMessage) (*CommandExecParams, *rpc.Error) {
	keys, vals, err := members(raw)
	if err != nil {
		return nil, err
	}
	p := new(CommandExecParams)
	seen := false
	for i, k := range keys {
		f, ok := execFields[k]
		if !ok {
			continue
		}
		if err := f(p, vals[i]); err != nil {
			return nil, err
		}
		seen = seen || k == "command"
	}
	if !seen {
		return nil, ErrInvalidRequestDecode("missing field `command`")
	}
	return p, nil
}

// DecodeCommandExecWrite decodes command/exec/write params.
func DecodeCommandExecWrite(raw json.RawMessage) (*CommandExecWriteParams, *rpc.Error) {
	p := new(CommandExecWriteParams)
	return p, decodeFollowUp(raw, &p.ProcessID, func(k string, v json.RawMessage) (err *rpc.Error) {
		switch k {
		case "deltaBase64":
			p.DeltaBase64, err = decodeOptString(v, "a string")
		case "closeStdin":
			p.CloseStdin, err = decodeBool(v)
		}
		return err
	})
}

// DecodeCommandExecResize decodes command/exec/resize params.
func DecodeCommandExecResize(raw json.RawMessage) (*CommandExecResizeParams, *rpc.Error) {
	p := new(CommandExecResizeParams)
	var size *TermSize
	err := decodeFollowUp(raw, &p.ProcessID, func(k string, v json.RawMessage) (err *rpc.Error) {
		if k == "size" {
			if isNull(v) {
				return typeErr(v, "struct CommandExecTerminalSize")
			}
			size, err = decodeSize(v)
		}
		return err
	})
	if err == nil && size == nil {
		err = ErrInvalidRequestDecode("missing field `size`")
	}
	if size != nil {
		p.Size = *size
	}
	return p, err
}

// DecodeCommandExecTerminate decodes command/exec/terminate params.
func DecodeCommandExecTerminate(raw json.RawMessage) (*CommandExecTerminateParams, *rpc.Error) {
	p := new(CommandExecTerminateParams)
	return p, decodeFollowUp(raw, &p.ProcessID, func(string, json.RawMessage) *rpc.Error { return nil })
}

// decodeFollowUp decodes the members of a follow-up request: the required
// processId into id, the others through other.
func decodeFollowUp(raw json.RawMessage, id *string, other func(k string, v json.RawMessage) *rpc.Error) *rpc.Error {
	keys, vals, err := members(raw)
	if err != nil {
		return err
	}
	seen := false
	for i, k := range keys {
		if k == "processId" {
			if *id, err = decodeString(vals[i], "a string"); err != nil {
				return err
			}
			seen = true
			continue
		}
		if err := other(k, vals[i]); err != nil {
			return err
		}
	}
	if !seen {
		return ErrInvalidRequestDecode("missing field `processId`")
	}
	return nil
}
