package wire

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/codexec/codex/rpc"
)

// MethodFSWatchMissing and MethodFSMissingChanged (a notification) are the missing-path watch
// of docs/protocol.md §6.11.1.
const (
	MethodFSWatchMissing   = "fs/watchMissing"
	MethodFSMissingChanged = "fs/missingChanged" // notification, server → client
)

// WatchMissingParams is the params of fs/watchMissing. Decode it with
// DecodeWatchMissing, which reports problems with the reference's texts.
type WatchMissingParams struct {
	WatchID uint64 `json:"watchId" rpc:"required"`
	Missing []Path `json:"missing" rpc:"required"`
	Present *Path  `json:"present"`
}

// WatchMissingResult is the result of fs/watchMissing.
type WatchMissingResult struct {
	Watching bool `json:"watching"`
}

// MissingChangedParams is the params of the fs/missingChanged notification.
type MissingChangedParams struct {
	WatchID uint64 `json:"watchId"`
}

// DecodeWatchMissing decodes fs/watchMissing params. Every failure is a
// -32602 error whose text is the one the reference gives for the same input
// (docs/protocol.md §6.11.1): a negative or fractional id is "invalid number";
// positional params must have exactly the three members.
func DecodeWatchMissing(raw json.RawMessage) (WatchMissingParams, error) {
	var p WatchMissingParams
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	var id, missing, present json.RawMessage
	switch raw[0] {
	case '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return p, rpc.Errorf(rpc.CodeInvalidParams, "%v", err)
		}
		var ok bool
		if id, ok = m["watchId"]; !ok {
			return p, rpc.Errorf(rpc.CodeInvalidParams, "missing field `watchId`")
		}
		if err := decodeU64(id, &p.WatchID); err != nil {
			return p, err
		}
		if missing, ok = m["missing"]; !ok {
			return p, rpc.Errorf(rpc.CodeInvalidParams, "missing field `missing`")
		}
		present = m["present"]
	case '[':
		var a []json.RawMessage
		if err := json.Unmarshal(raw, &a); err != nil {
			return p, rpc.Errorf(rpc.CodeInvalidParams, "%v", err)
		}
		if len(a) < 3 {
			return p, rpc.Errorf(rpc.CodeInvalidParams, "invalid length %d, expected struct FsWatchMissingParams with 3 elements", len(a))
		}
		if len(a) > 3 {
			return p, rpc.Errorf(rpc.CodeInvalidParams, "invalid length %d, expected fewer elements in array", len(a))
		}
		if err := decodeU64(a[0], &p.WatchID); err != nil {
			return p, err
		}
		missing, present = a[1], a[2]
	default:
		kind := serdeKind(raw)
		if raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9') {
			kind = "number"
		}
		return p, rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected struct FsWatchMissingParams", kind)
	}
	if missing[0] != '[' {
		return p, rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected a sequence", serdeKind(missing))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(missing, &items); err != nil {
		return p, rpc.Errorf(rpc.CodeInvalidParams, "%v", err)
	}
	p.Missing = make([]Path, 0, len(items))
	for _, it := range items {
		pa, err := decodeURI(it)
		if err != nil {
			return p, err
		}
		p.Missing = append(p.Missing, pa)
	}
	if len(present) > 0 && !bytes.Equal(present, []byte("null")) {
		pa, err := decodeURI(present)
		if err != nil {
			return p, err
		}
		p.Present = &pa
	}
	return p, nil
}

func decodeU64(raw json.RawMessage, v *uint64) error {
	if len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		n, err := strconv.ParseUint(string(raw), 10, 64)
		if err != nil {
			return rpc.Errorf(rpc.CodeInvalidParams, "invalid number")
		}
		*v = n
		return nil
	}
	return rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected u64", serdeKind(raw))
}

func decodeURI(raw json.RawMessage) (Path, error) {
	if raw[0] != '"' {
		return Path{}, rpc.Errorf(rpc.CodeInvalidParams, "invalid type: %s, expected a string", serdeKind(raw))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return Path{}, rpc.Errorf(rpc.CodeInvalidParams, "%v", err)
	}
	return ParsePath(s)
}
