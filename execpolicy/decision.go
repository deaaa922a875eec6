package execpolicy

// Decision is what a rule says about a command. The zero value is Allow.
// Decisions are ordered by strictness: Forbidden > Prompt > Allow, and
// the strictest matching rule decides.
type Decision int

const (
	Allow Decision = iota
	Prompt
	Forbidden
)

// String returns the decision as the rules files spell it.
func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Prompt:
		return "prompt"
	case Forbidden:
		return "forbidden"
	}
	return "invalid"
}

// Stricter returns the stricter of d and o.
func (d Decision) Stricter(o Decision) Decision { return max(d, o) }
