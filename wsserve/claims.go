package wsserve

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// jwtClaims are the claims a signed bearer token is checked on. They are
// decoded strictly, as the reference server does: "exp" and "nbf" are
// integers (no fraction, exponent or string), "iss" a string, "aud" a
// string or an array of strings, null meaning absent (except for "exp"),
// and a repeated member makes the token invalid. Other members are
// ignored.
type jwtClaims struct {
	exp *int64
	nbf *int64
	iss *string
	aud []string
}

// UnmarshalJSON decodes the claims object.
func (c *jwtClaims) UnmarshalJSON(b []byte) error {
	return walkObject(b, func(key string, raw json.RawMessage) error {
		if err := c.set(key, raw); err != nil {
			return fmt.Errorf("jwt claim %q: %w", key, err)
		}
		return nil
	})
}

// checkedMembers are the members whose repetition makes a token invalid:
// the claims checked and the header's "alg". A repeated member is
// ambiguous (which one did the issuer mean?); others are ignored.
var checkedMembers = map[string]bool{"exp": true, "nbf": true, "iss": true, "aud": true, "alg": true}

// walkObject calls set for each member of the JSON object b, in order,
// and fails on anything but an object or on a repeated checked member.
func walkObject(b []byte, set func(key string, raw json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		if seen[key] {
			return fmt.Errorf("member %q repeated", key)
		}
		if checkedMembers[key] {
			seen[key] = true
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		if err := set(key, raw); err != nil {
			return err
		}
	}
	_, err := dec.Token()
	return err
}

// checkHeader fails when the JWT header segment of raw repeats a checked
// member (the library keeps the last one silently).
func checkHeader(raw string) error {
	seg, _, _ := strings.Cut(raw, ".")
	b, err := base64.RawURLEncoding.Strict().DecodeString(seg)
	if err != nil {
		return err
	}
	return walkObject(b, func(string, json.RawMessage) error { return nil })
}

// set decodes one member.
func (c *jwtClaims) set(key string, raw json.RawMessage) error {
	null := string(raw) == "null"
	var err error
	switch key {
	case "exp":
		c.exp, err = claimInt(raw)
	case "nbf":
		if !null {
			c.nbf, err = claimInt(raw)
		}
	case "iss":
		if !null {
			var s string
			err = json.Unmarshal(raw, &s)
			c.iss = &s
		}
	case "aud":
		if !null {
			c.aud, err = claimAudience(raw)
		}
	}
	return err
}

// claimInt decodes an integer that fits in an int64.
func claimInt(raw json.RawMessage) (*int64, error) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return nil, errors.New("not an integer")
	}
	return &n, nil
}

// claimAudience decodes a string or an array of strings.
func claimAudience(raw json.RawMessage) ([]string, error) {
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{one}, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, errors.New("not a string or an array of strings")
	}
	many := make([]string, len(elems))
	for i, e := range elems {
		// A null member would decode as "" without an error.
		if err := json.Unmarshal(e, &many[i]); err != nil || string(e) == "null" {
			return nil, errors.New("an audience member is not a string")
		}
	}
	return many, nil
}
