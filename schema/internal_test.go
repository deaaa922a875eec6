package schema

import (
	"reflect"
	"strings"
	"testing"

	"github.com/codexec/codex/wire"
)

type selfEncoded struct{ A int }

func (selfEncoded) MarshalJSON() ([]byte, error) { return []byte(`"x"`), nil }

type holdsSelfEncoded struct {
	Inner *selfEncoded `json:"inner"`
}

// TestUnknownMarshalerRefused: a type that writes its own JSON, which
// reflection cannot see, stops the generator instead of being described
// from its fields.
func TestUnknownMarshalerRefused(t *testing.T) {
	_, err := reflectType(reflect.TypeFor[holdsSelfEncoded](), wire.ServerToClient)
	if err == nil || !strings.Contains(err.Error(), "selfEncoded has its own MarshalJSON") {
		t.Fatalf("err = %v, want a refusal naming selfEncoded", err)
	}
}
